import com.sun.jdi.ArrayReference;
import com.sun.jdi.BooleanValue;
import com.sun.jdi.ByteValue;
import com.sun.jdi.CharValue;
import com.sun.jdi.ClassType;
import com.sun.jdi.DoubleValue;
import com.sun.jdi.Field;
import com.sun.jdi.FloatValue;
import com.sun.jdi.IntegerValue;
import com.sun.jdi.LongValue;
import com.sun.jdi.ObjectReference;
import com.sun.jdi.PrimitiveValue;
import com.sun.jdi.ReferenceType;
import com.sun.jdi.ShortValue;
import com.sun.jdi.StringReference;
import com.sun.jdi.Value;
import java.math.BigDecimal;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Values of the debuggee in execbench's typed JSON, read through JDI only (no method of the
 * debuggee is ever invoked, so recording runs none of its code):
 *
 * <ul>
 * <li>numbers as the published native values are: an integral double is an int, a char
 *     its code; other doubles as Python's repr writes them;
 * <li>strings, boxed primitives, {@code StringBuilder}/{@code StringBuffer} (their
 *     characters read from their fields) and {@code ArrayList} (its elements) by value;
 * <li>arrays as lists, objects of the project's own classes as mappings from field name to
 *     value, each to {@code maxDepth} levels and {@code maxNodes} parts in all; what lies
 *     beyond, and any other object, is opaque ({@code ["object", type, text]}) with no
 *     address in its text.
 * </ul>
 *
 * <p>A reference's identity (arrays and objects other than strings and boxes) is its JDI
 * object id, which the session turns into a per-call token.
 */
final class Encoder {
    private static final Set<String> BOXES = Set.of("java.lang.Integer", "java.lang.Long",
            "java.lang.Short", "java.lang.Byte", "java.lang.Character", "java.lang.Boolean",
            "java.lang.Double", "java.lang.Float");
    private static final Set<String> BUILDERS = Set.of("java.lang.StringBuilder",
            "java.lang.StringBuffer");
    private static final int MAX_STRING = 10_000;

    private final int maxDepth;
    private final int maxNodes;
    private final Predicate<ReferenceType> ownClass;
    private int nodes;

    Encoder(int maxDepth, int maxNodes, Predicate<ReferenceType> ownClass) {
        this.maxDepth = maxDepth;
        this.maxNodes = maxNodes;
        this.ownClass = ownClass;
    }

    /** Whether the value's identity says something: an array or a mutable object. */
    static boolean hasIdentity(Value value) {
        if (!(value instanceof ObjectReference) || value instanceof StringReference) {
            return false;
        }
        return !BOXES.contains(((ObjectReference) value).referenceType().name());
    }

    /** Appends the value (a whole one: the node budget starts afresh). Parts are counted
     * as the driver counts them (a mapping's keys too); a value that still comes out over
     * the budget, its containers' own checks notwithstanding, is opaque as a whole. */
    void value(StringBuilder out, Value value) {
        nodes = 0;
        StringBuilder part = new StringBuilder();
        encode(part, value, 0);
        if (nodes <= maxNodes) {
            out.append(part);
        } else {
            String type = value.type().name();
            opaque(out, type, "<a " + type + " of more than " + maxNodes + " parts>");
        }
    }

    private void encode(StringBuilder out, Value value, int depth) {
        nodes++;
        if (value == null) {
            out.append("[\"none\"]");
        } else if (value instanceof PrimitiveValue) {
            primitive(out, (PrimitiveValue) value);
        } else if (value instanceof StringReference) {
            string(out, ((StringReference) value).value(), "java.lang.String");
        } else if (value instanceof ArrayReference) {
            array(out, (ArrayReference) value, depth);
        } else if (value instanceof ObjectReference) {
            object(out, (ObjectReference) value, depth);
        } else {
            opaque(out, value.type().name(), "<" + value.type().name() + ">");
        }
    }

    private void primitive(StringBuilder out, PrimitiveValue value) {
        if (value instanceof BooleanValue) {
            out.append("[\"bool\",").append(((BooleanValue) value).value()).append(']');
        } else if (value instanceof CharValue) {
            out.append("[\"int\",").append((int) ((CharValue) value).value()).append(']');
        } else if (value instanceof DoubleValue || value instanceof FloatValue) {
            real(out, value instanceof DoubleValue ? ((DoubleValue) value).value()
                    : Double.parseDouble(Float.toString(((FloatValue) value).value())));
        } else if (value instanceof LongValue || value instanceof IntegerValue
                || value instanceof ShortValue || value instanceof ByteValue) {
            out.append("[\"int\",").append(value.longValue()).append(']');
        } else {
            opaque(out, value.type().name(), value.toString());
        }
    }

    /** A number by its value: integral ones are ints, as GDB and JDB print them. */
    static void real(StringBuilder out, double x) {
        boolean negativeZero = x == 0 && Double.doubleToRawLongBits(x) != 0;
        if (!Double.isInfinite(x) && !Double.isNaN(x) && x == Math.rint(x)
                && Math.abs(x) < 0x1p63 && !negativeZero) {
            out.append("[\"int\",").append((long) x).append(']');
            return;
        }
        out.append("[\"float\",\"").append(repr(x)).append("\"]");
    }

    /** Python's repr of a double: Java's shortest digits in Python's layout. */
    static String repr(double x) {
        if (Double.isNaN(x)) {
            return "nan";
        }
        if (Double.isInfinite(x)) {
            return x > 0 ? "inf" : "-inf";
        }
        String sign = x < 0 || Double.doubleToRawLongBits(x) != 0 && x == 0 ? "-" : "";
        if (x == 0) {
            return sign + "0.0";
        }
        BigDecimal d = new BigDecimal(Double.toString(Math.abs(x))).stripTrailingZeros();
        String digits = d.unscaledValue().toString();
        int exponent = digits.length() - 1 - d.scale();
        if (exponent < -4 || exponent >= 16) {
            String mantissa = digits.length() == 1 ? digits
                    : digits.charAt(0) + "." + digits.substring(1);
            return sign + mantissa + "e" + (exponent < 0 ? "-" : "+")
                    + String.format("%02d", Math.abs(exponent));
        }
        if (exponent < 0) {
            return sign + "0." + "0".repeat(-exponent - 1) + digits;
        }
        if (digits.length() <= exponent + 1) {
            return sign + digits + "0".repeat(exponent + 1 - digits.length()) + ".0";
        }
        return sign + digits.substring(0, exponent + 1) + "." + digits.substring(exponent + 1);
    }

    private void string(StringBuilder out, String text, String type) {
        if (text.length() > MAX_STRING) {
            opaque(out, type, "<a string of " + text.length() + " characters>");
            return;
        }
        out.append("[\"str\",");
        Json.string(out, text);
        out.append(']');
    }

    private void array(StringBuilder out, ArrayReference array, int depth) {
        String type = array.referenceType().name();
        int length = array.length();
        if (depth >= maxDepth || nodes + length > maxNodes) {
            opaque(out, type, "<" + type.replaceFirst("\\[\\]$", "[" + length + "]") + ">");
            return;
        }
        items(out, length == 0 ? List.of() : array.getValues(), depth);
    }

    private void items(StringBuilder out, List<Value> values, int depth) {
        out.append("[\"list\",[");
        for (int i = 0; i < values.size(); i++) {
            if (i > 0) {
                out.append(',');
            }
            encode(out, values.get(i), depth + 1);
        }
        out.append("]]");
    }

    private void object(StringBuilder out, ObjectReference object, int depth) {
        ReferenceType type = object.referenceType();
        String name = type.name();
        if (BOXES.contains(name)) {
            encode(out, object.getValue(type.fieldByName("value")), depth);
        } else if (BUILDERS.contains(name)) {
            string(out, builderText(object), name);
        } else if (name.equals("java.util.ArrayList") && depth < maxDepth) {
            arrayList(out, object, depth);
        } else if (type instanceof ClassType && ((ClassType) type).isEnum()) {
            Value constant = object.getValue(type.fieldByName("name"));
            opaque(out, name, constant instanceof StringReference
                    ? ((StringReference) constant).value() : "<" + name + ">");
        } else if (ownClass.test(type) && depth < maxDepth) {
            fields(out, object, type, depth);
        } else {
            opaque(out, name, "<" + name + " object>");
        }
    }

    private void arrayList(StringBuilder out, ObjectReference list, int depth) {
        ReferenceType type = list.referenceType();
        int size = ((IntegerValue) list.getValue(type.fieldByName("size"))).value();
        ArrayReference data = (ArrayReference) list.getValue(type.fieldByName("elementData"));
        if (nodes + size > maxNodes || data == null) {
            opaque(out, type.name(), "<an ArrayList of " + size + " elements>");
            return;
        }
        items(out, size == 0 ? List.of() : data.getValues(0, size), depth);
    }

    private void fields(StringBuilder out, ObjectReference object, ReferenceType type,
                        int depth) {
        List<Field> own = new ArrayList<>();
        for (Field field : type.allFields()) {
            if (!field.isStatic() && !field.isSynthetic()) {
                own.add(field);
            }
        }
        if (nodes + 2 * own.size() > maxNodes) {
            opaque(out, type.name(), "<" + type.name() + " object>");
            return;
        }
        Map<Field, Value> values = own.isEmpty() ? Map.of() : object.getValues(own);
        out.append("[\"dict\",[");
        for (int i = 0; i < own.size(); i++) {
            if (i > 0) {
                out.append(',');
            }
            nodes++;  // the key
            out.append("[[\"str\",");
            Json.string(out, own.get(i).name());
            out.append("],");
            encode(out, values.get(own.get(i)), depth + 1);
            out.append(']');
        }
        out.append("]]");
    }

    /** A StringBuilder's characters from its fields (JDK 9 and later: bytes and a coder). */
    private static String builderText(ObjectReference builder) {
        ReferenceType type = builder.referenceType();
        Field valueField = type.fieldByName("value");
        Field countField = type.fieldByName("count");
        Field coderField = type.fieldByName("coder");
        if (valueField == null || countField == null) {
            return "";
        }
        int count = ((IntegerValue) builder.getValue(countField)).value();
        Value data = builder.getValue(valueField);
        if (!(data instanceof ArrayReference) || count == 0) {
            return "";
        }
        boolean utf16 = coderField != null
                && ((ByteValue) builder.getValue(coderField)).value() == 1;
        int length = Math.min(count, MAX_STRING + 1);
        ArrayReference bytes = (ArrayReference) data;
        List<Value> values = bytes.getValues(0, Math.min(bytes.length(),
                utf16 ? 2 * length : length));
        int high = ByteOrder.nativeOrder() == ByteOrder.BIG_ENDIAN ? 0 : 1;
        StringBuilder text = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            if (utf16 && 2 * i + 1 < values.size()) {
                int upper = ((ByteValue) values.get(2 * i + high)).value() & 0xff;
                int lower = ((ByteValue) values.get(2 * i + 1 - high)).value() & 0xff;
                text.append((char) (upper << 8 | lower));  // the JDK's UTF-16: native order
            } else if (!utf16 && i < values.size()) {
                text.append((char) (((ByteValue) values.get(i)).value() & 0xff));
            }
        }
        return text.toString();
    }

    private static void opaque(StringBuilder out, String type, String text) {
        out.append("[\"object\",");
        Json.string(out, type);
        out.append(',');
        Json.string(out, text);
        out.append(']');
    }
}

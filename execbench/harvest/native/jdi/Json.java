import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * JSON text: strings written escaped (a lone surrogate becomes U+FFFD, so every line is
 * valid UTF-8), the driver's flat config read, and the channel's lines written whole.
 */
final class Json {
    private Json() {
    }

    /** Appends {@code text} as a JSON string. */
    static void string(StringBuilder out, String text) {
        out.append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20 || c == 0x7f) {
                out.append(String.format("\\u%04x", (int) c));
            } else if (Character.isHighSurrogate(c) && i + 1 < text.length()
                    && Character.isLowSurrogate(text.charAt(i + 1))) {
                out.append(c).append(text.charAt(++i));
            } else if (Character.isSurrogate(c)) {
                out.append('\ufffd');
            } else {
                out.append(c);
            }
        }
        out.append('"');
    }

    /** The driver's config: a flat JSON object of numbers and strings it wrote itself. */
    static final class Config {
        private static final String STRING = "\"((?:[^\"\\\\]|\\\\.)*)\"";
        private final String text;

        Config(Path path) throws IOException {
            text = Files.readString(path, StandardCharsets.UTF_8);
        }

        long number(String key, long fallback) {
            Matcher m = Pattern.compile("\"" + key + "\"\\s*:\\s*(-?\\d+)").matcher(text);
            return m.find() ? Long.parseLong(m.group(1)) : fallback;
        }

        String text(String key) {
            Matcher m = Pattern.compile("\"" + key + "\"\\s*:\\s*" + STRING).matcher(text);
            if (!m.find()) {
                throw new IllegalArgumentException("the config has no " + key);
            }
            return unquote(m.group(1));
        }

        /** A list of strings; empty when the key is absent. */
        List<String> texts(String key) {
            List<String> found = new ArrayList<>();
            Matcher m = Pattern.compile("\"" + key + "\"\\s*:\\s*\\[").matcher(text);
            if (!m.find()) {
                return found;
            }
            Matcher item = Pattern.compile("\\s*,?\\s*" + STRING).matcher(text);
            int at = m.end();
            while (item.region(at, text.length()).lookingAt()) {
                found.add(unquote(item.group(1)));
                at = item.end();
            }
            return found;
        }

        /** A JSON string's body: the escapes Python's json writes undone. */
        private static String unquote(String body) {
            StringBuilder out = new StringBuilder(body.length());
            for (int i = 0; i < body.length(); i++) {
                char c = body.charAt(i);
                if (c != '\\' || i + 1 == body.length()) {
                    out.append(c);
                    continue;
                }
                char next = body.charAt(++i);
                switch (next) {
                    case 'n' -> out.append('\n');
                    case 't' -> out.append('\t');
                    case 'r' -> out.append('\r');
                    case 'b' -> out.append('\b');
                    case 'f' -> out.append('\f');
                    case 'u' -> {
                        out.append((char) Integer.parseInt(body.substring(i + 1, i + 5), 16));
                        i += 4;
                    }
                    default -> out.append(next);
                }
            }
            return out.toString();
        }
    }

    /** The channel: whole lines, one writer at a time (sessions of several JVMs share it). */
    static final class Channel {
        private final OutputStream out;

        Channel(OutputStream out) {
            this.out = out;
        }

        synchronized void line(StringBuilder record) {
            record.append('\n');
            try {
                out.write(record.toString().getBytes(StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new IllegalStateException("the records channel is closed", e);
            }
        }

        synchronized void close() throws IOException {
            out.flush();
            out.close();
        }
    }
}

import com.sun.jdi.AbsentInformationException;
import com.sun.jdi.Field;
import com.sun.jdi.IncompatibleThreadStateException;
import com.sun.jdi.LocalVariable;
import com.sun.jdi.Location;
import com.sun.jdi.Method;
import com.sun.jdi.ObjectCollectedException;
import com.sun.jdi.ObjectReference;
import com.sun.jdi.ReferenceType;
import com.sun.jdi.StackFrame;
import com.sun.jdi.StringReference;
import com.sun.jdi.ThreadReference;
import com.sun.jdi.VMDisconnectedException;
import com.sun.jdi.Value;
import com.sun.jdi.VirtualMachine;
import com.sun.jdi.VoidValue;
import com.sun.jdi.event.BreakpointEvent;
import com.sun.jdi.event.ClassPrepareEvent;
import com.sun.jdi.event.Event;
import com.sun.jdi.event.EventSet;
import com.sun.jdi.event.ExceptionEvent;
import com.sun.jdi.event.MethodExitEvent;
import com.sun.jdi.event.StepEvent;
import com.sun.jdi.event.VMDeathEvent;
import com.sun.jdi.event.VMDisconnectEvent;
import com.sun.jdi.request.BreakpointRequest;
import com.sun.jdi.request.ClassPrepareRequest;
import com.sun.jdi.request.EventRequest;
import com.sun.jdi.request.EventRequestManager;
import com.sun.jdi.request.ExceptionRequest;
import com.sun.jdi.request.MethodExitRequest;
import com.sun.jdi.request.StepRequest;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One debuggee JVM: each method of the project's classes gets a breakpoint at every code
 * location of its lines, and each stop is a line of a followed call about to run (a
 * line's several locations, such as a for-loop's parts, count once while the call stays on
 * that line). A stop deeper in the thread's stack than its innermost followed call starts
 * a call: the call record, with the arguments as they came. Once a followed call reaches
 * a line that may return (its text says {@code return}, or the method's last line), a
 * method exit request for its class on its thread gives its return value and final
 * locals: made no earlier, since while it is on the JVM runs that thread interpreted
 * and stops at every exit of the class's methods. An exception request on the thread of
 * a followed call ends the call where an exception it will not catch is thrown (the JVM
 * sends no exit event for a frame an exception pops), with the exception's class and
 * message.
 *
 * <p>No method entry request is ever made: while one is on, the JVM runs every method of
 * every thread interpreted. Once a method's calls followed reach {@code maxCalls} and none
 * of them runs, its breakpoints go, so the rest of the tests run at the JVM's own speed.
 * A call's line records stop one past {@code maxEvents} (the driver drops such a call: its
 * states would be cut), and the call then runs unwatched ({@link #giveUp}). A call's records name references by tokens ({@code a1},
 * {@code a2}, ...) in order of first appearance in that call.
 */
final class Session implements Runnable {
    private final VirtualMachine vm;
    private final EventRequestManager requests;
    private final Sources sources;
    private final Path root;
    private final Json.Channel channel;
    private final AtomicInteger calls;
    private final long maxEvents;
    private final int maxCalls;
    private final Encoder encoder;
    private final Map<Method, Function> functions = new HashMap<>();
    private final Map<ReferenceType, Boolean> own = new HashMap<>();
    private final Map<Long, Deque<Active>> stacks = new HashMap<>();
    private final Map<Long, ExceptionRequest> watched = new HashMap<>();
    private final Map<Long, Pause> paused = new HashMap<>();
    private boolean complained;

    /** A thread stepping out of a call given up on, {@code depth} frames deep. */
    private record Pause(StepRequest step, int depth, List<Function> functions) {
        Pause(StepRequest step, int depth) {
            this(step, depth, new ArrayList<>());
        }
    }

    /** One recorded method. */
    private static final class Function {
        final String id;
        final String name;
        final String file;
        final int first;
        final int last;
        final Set<Integer> returns;
        final List<BreakpointRequest> breakpoints = new ArrayList<>();
        int followed;
        int running;

        Function(String id, String name, String file, int first, int last,
                 Set<Integer> returns) {
            this.id = id;
            this.returns = returns;
            this.name = name;
            this.file = file;
            this.first = first;
            this.last = last;
        }
    }

    /** A followed call on a thread's stack, {@code depth} frames deep. */
    private static final class Active {
        final Function function;
        final Method method;
        final int call;
        final int depth;
        final long thread;
        MethodExitRequest exit;
        final Map<Long, String> tokens = new HashMap<>();
        int line = -1;
        long lines;
        boolean cut;

        Active(Function function, Method method, int call, int depth, long thread) {
            this.function = function;
            this.method = method;
            this.call = call;
            this.depth = depth;
            this.thread = thread;
        }
    }

    Session(VirtualMachine vm, Sources sources, Path root, Json.Channel channel,
            AtomicInteger calls, Recorder.Bounds bounds) {
        this.vm = vm;
        this.requests = vm.eventRequestManager();
        this.sources = sources;
        this.root = root;
        this.channel = channel;
        this.calls = calls;
        this.maxEvents = bounds.maxEvents();
        this.maxCalls = bounds.maxCalls();
        this.encoder = new Encoder(bounds.maxDepth(), bounds.maxNodes(), this::isOwn);
    }

    @Override
    public void run() {
        try {
            for (String filter : sources.classFilters()) {
                ClassPrepareRequest prepare = requests.createClassPrepareRequest();
                prepare.addClassFilter(filter);
                enable(prepare);
            }
            for (ReferenceType type : vm.allClasses()) {
                prepare(type);
            }
            vm.resume();
            loop();
        } catch (VMDisconnectedException e) {
            // the debuggee ended
        }
    }

    private static void enable(EventRequest request) {
        request.setSuspendPolicy(EventRequest.SUSPEND_EVENT_THREAD);
        request.enable();
    }

    private void loop() {
        while (true) {
            EventSet set;
            try {
                set = vm.eventQueue().remove();
            } catch (InterruptedException e) {
                return;
            }
            List<Event> ordered = new ArrayList<>(set);
            ordered.sort(Comparator.comparingInt(Session::rank));
            for (Event event : ordered) {
                if (event instanceof VMDeathEvent || event instanceof VMDisconnectEvent) {
                    return;
                }
                try {
                    handle(event);
                } catch (ObjectCollectedException | IncompatibleThreadStateException e) {
                    // the value or thread went away while it was read: the record is lost
                } catch (VMDisconnectedException e) {
                    throw e;
                } catch (RuntimeException e) {
                    // never leave the debuggee stopped: the event is lost, said once
                    if (!complained) {
                        complained = true;
                        System.err.println("execbench's Java recorder: " + e);
                    }
                }
            }
            set.resume();
        }
    }

    /** Co-located events in the order they happen: a line before the method's exit. */
    private static int rank(Event event) {
        return event instanceof MethodExitEvent ? 1 : 0;
    }

    private void handle(Event event) throws IncompatibleThreadStateException {
        if (event instanceof ClassPrepareEvent) {
            prepare(((ClassPrepareEvent) event).referenceType());
        } else if (event instanceof BreakpointEvent) {
            line((BreakpointEvent) event);
        } else if (event instanceof MethodExitEvent) {
            exited((MethodExitEvent) event);
        } else if (event instanceof ExceptionEvent) {
            raised((ExceptionEvent) event);
        } else if (event instanceof StepEvent) {
            resumed((StepEvent) event);
        }
    }

    private boolean isOwn(ReferenceType type) {
        return own.computeIfAbsent(type, t -> {
            try {
                return sources.fileOf(t.name(), t.sourceName()) != null;
            } catch (AbsentInformationException e) {
                return false;
            }
        });
    }

    private void prepare(ReferenceType type) {
        if (!type.isPrepared() || !isOwn(type)) {
            return;
        }
        String file;
        try {
            file = sources.fileOf(type.name(), type.sourceName());
        } catch (AbsentInformationException e) {
            return;
        }
        Map<String, Integer> named = new HashMap<>();
        for (Method method : type.methods()) {
            named.merge(method.name(), 1, Integer::sum);
        }
        String className = type.name().substring(type.name().lastIndexOf('.') + 1)
                .replace('$', '.');
        for (Method method : type.methods()) {
            if (method.isSynthetic() || method.isConstructor() || method.isStaticInitializer()
                    || method.isAbstract() || method.isNative() || functions.containsKey(method)) {
                continue;
            }
            List<Location> locations;
            try {
                method.variables();  // compiled without -g: no names to record
                locations = method.allLineLocations();
            } catch (AbsentInformationException e) {
                continue;
            }
            if (locations.isEmpty()) {
                continue;
            }
            int low = Integer.MAX_VALUE;
            int high = 0;
            for (Location location : locations) {
                low = Math.min(low, location.lineNumber());
                high = Math.max(high, location.lineNumber());
            }
            int[] span = sources.span(root, file, method.name(), low, high);
            if (span == null) {
                continue;
            }
            String name = className + "." + method.name();
            String id = file + ":" + name;
            if (named.get(method.name()) > 1) {
                id += "(" + String.join(",", method.argumentTypeNames()) + ")";
            }
            Function function = new Function(id, name, file, span[0], span[1],
                    sources.returnLines(root, file, low, high));
            for (Location location : locations) {
                BreakpointRequest breakpoint = requests.createBreakpointRequest(location);
                enable(breakpoint);
                function.breakpoints.add(breakpoint);
            }
            functions.put(method, function);
        }
    }

    private Deque<Active> stack(ThreadReference thread) {
        return stacks.computeIfAbsent(thread.uniqueID(), t -> new ArrayDeque<>());
    }

    private void line(BreakpointEvent event) throws IncompatibleThreadStateException {
        ThreadReference thread = event.thread();
        Method method = event.location().method();
        Function function = functions.get(method);
        Deque<Active> stack = stack(thread);
        int depth = thread.frameCount();
        Pause pause = paused.get(thread.uniqueID());
        if (pause != null && depth >= pause.depth) {
            return;  // inside a call given up on
        }
        while (!stack.isEmpty() && (stack.peek().depth > depth || stack.peek().depth == depth
                && !stack.peek().method.equals(method))) {
            end(stack, stack.peek());  // gone unseen: no return record, the driver drops it
        }
        Active active = stack.peek();
        if (active == null || active.depth < depth) {
            if (function == null || function.followed >= maxCalls) {
                return;
            }
            active = start(thread, stack, function, method, depth);
        }
        int line = event.location().lineNumber();
        if (active.line == line || active.cut) {
            return;
        }
        active.line = line;
        if (active.exit == null && function.returns.contains(line)) {
            active.exit = requests.createMethodExitRequest();
            active.exit.addThreadFilter(thread);
            active.exit.addClassFilter(method.declaringType());
            enable(active.exit);
        }
        StackFrame frame = thread.frame(0);
        StringBuilder out = new StringBuilder(256);
        out.append("{\"kind\":\"line\",\"call\":").append(active.call).append(",\"line\":")
                .append(line).append(",\"locals\":");
        variables(out, active, frame, visible(frame));
        out.append('}');
        emit(out);
        if (++active.lines > maxEvents) {
            giveUp(thread, stack, active);  // one past the bound tells the driver
        }
    }

    /** A call past the line bound is dropped by the driver: it is left to run at the JVM's
     * speed. Its method's breakpoints pause until a step out of its frame ends (so a loop
     * of a billion turns costs no stops), and the method's other running calls, which
     * would miss lines meanwhile, are cut: they get no more records. */
    private void giveUp(ThreadReference thread, Deque<Active> stack, Active active) {
        end(stack, active);
        Function function = active.function;
        for (Deque<Active> other : stacks.values()) {
            for (Active running : other) {
                running.cut |= running.function == function;
            }
        }
        function.breakpoints.forEach(EventRequest::disable);
        Pause pause = paused.get(thread.uniqueID());
        if (pause == null) {
            StepRequest step = requests.createStepRequest(thread, StepRequest.STEP_LINE,
                    StepRequest.STEP_OUT);
            enable(step);
            pause = new Pause(step, active.depth);
            paused.put(thread.uniqueID(), pause);
        }
        pause.functions.add(function);
    }

    /** The step out of a call given up on is done: its methods' breakpoints come back. */
    private void resumed(StepEvent event) {
        Pause pause = paused.remove(event.thread().uniqueID());
        if (pause == null) {
            return;
        }
        requests.deleteEventRequest(pause.step);
        for (Function function : pause.functions) {
            if (function.followed < maxCalls || function.running > 0) {
                function.breakpoints.forEach(EventRequest::enable);
            }
        }
    }

    /** A new followed call, stopped at its first line: its call record. */
    private Active start(ThreadReference thread, Deque<Active> stack, Function function,
                         Method method, int depth) throws IncompatibleThreadStateException {
        if (stack.isEmpty()) {
            ExceptionRequest exceptions = requests.createExceptionRequest(null, true, true);
            exceptions.addThreadFilter(thread);
            enable(exceptions);
            watched.put(thread.uniqueID(), exceptions);
        }
        Active active = new Active(function, method, calls.incrementAndGet(), depth,
                thread.uniqueID());
        stack.push(active);
        function.followed++;
        function.running++;
        List<LocalVariable> arguments;
        try {
            arguments = method.arguments();
        } catch (AbsentInformationException e) {
            arguments = List.of();
        }
        StringBuilder out = new StringBuilder(256);
        out.append("{\"kind\":\"call\",\"call\":").append(active.call).append(",\"function\":");
        Json.string(out, function.id);
        out.append(",\"file\":");
        Json.string(out, function.file);
        out.append(",\"name\":");
        Json.string(out, function.name);
        out.append(",\"first\":").append(function.first).append(",\"last\":")
                .append(function.last).append(",\"args\":");
        variables(out, active, thread.frame(0), arguments);
        out.append('}');
        emit(out);
        return active;
    }

    /** The call leaves the stack: its requests go, and its method's breakpoints too once
     * its calls followed reach the bound and none runs. */
    private void end(Deque<Active> stack, Active active) {
        stack.remove(active);
        if (active.exit != null) {
            requests.deleteEventRequest(active.exit);
        }
        Function function = active.function;
        function.running--;
        if (function.followed >= maxCalls && function.running == 0) {
            function.breakpoints.forEach(EventRequest::disable);
        }
        ExceptionRequest exceptions = stack.isEmpty() ? watched.remove(active.thread) : null;
        if (exceptions != null) {
            requests.deleteEventRequest(exceptions);
        }
    }

    private void exited(MethodExitEvent event) throws IncompatibleThreadStateException {
        ThreadReference thread = event.thread();
        Deque<Active> stack = stack(thread);
        Active active = stack.peek();
        if (active == null || !active.method.equals(event.method())
                || thread.frameCount() != active.depth) {
            return;
        }
        if (!active.cut) {
            Value value = event.returnValue();
            finish(active, thread.frame(0), value instanceof VoidValue ? null : value, null);
        }
        end(stack, active);
    }

    /** An exception thrown: the followed calls it will unwind end here, their frames still
     * there to read. The catching frame is the nearest one running the catch location's
     * method. */
    private void raised(ExceptionEvent event) throws IncompatibleThreadStateException {
        ThreadReference thread = event.thread();
        Deque<Active> stack = stack(thread);
        if (stack.isEmpty()) {
            return;
        }
        List<StackFrame> frames = thread.frames();
        int count = frames.size();
        int catching = 0;
        Location catcher = event.catchLocation();
        for (int k = 0; catcher != null && k < count; k++) {
            if (frames.get(k).location().method().equals(catcher.method())) {
                catching = count - k;
                break;
            }
        }
        String text = null;
        while (!stack.isEmpty() && stack.peek().depth > catching) {
            Active active = stack.peek();
            if (!active.cut) {
                text = text != null ? text : describe(event.exception());
                finish(active, frames.get(count - active.depth), null, text);
            }
            end(stack, active);
        }
    }

    private void finish(Active active, StackFrame frame, Value value, String exception) {
        StringBuilder out = new StringBuilder(256);
        out.append("{\"kind\":\"return\",\"call\":").append(active.call).append(",\"value\":");
        if (value == null) {
            out.append("null");
        } else {
            encoder.value(out, value);
        }
        out.append(",\"locals\":");
        variables(out, active, frame, visible(frame));
        if (exception != null) {
            out.append(",\"exception\":");
            Json.string(out, exception);
        }
        out.append('}');
        emit(out);
    }

    /** The exception's class and message, read from its fields. */
    private static String describe(ObjectReference exception) {
        String text = exception.referenceType().name();
        Field field = exception.referenceType().fieldByName("detailMessage");
        Value message = field == null ? null : exception.getValue(field);
        if (message instanceof StringReference) {
            String said = ((StringReference) message).value();
            text += ": " + (said.length() > 200 ? said.substring(0, 200) : said);
        }
        return text;
    }

    private static List<LocalVariable> visible(StackFrame frame) {
        try {
            return frame.visibleVariables();
        } catch (AbsentInformationException e) {
            return List.of();
        }
    }

    /** The variables as [name, value, token]. */
    private void variables(StringBuilder out, Active active, StackFrame frame,
                           List<LocalVariable> variables) {
        Map<LocalVariable, Value> values = variables.isEmpty() ? Map.of()
                : frame.getValues(variables);
        out.append('[');
        for (int i = 0; i < variables.size(); i++) {
            if (i > 0) {
                out.append(',');
            }
            variable(out, active, variables.get(i).name(), values.get(variables.get(i)));
        }
        out.append(']');
    }

    private void variable(StringBuilder out, Active active, String name, Value value) {
        out.append('[');
        Json.string(out, name);
        out.append(',');
        encoder.value(out, value);
        out.append(',');
        if (Encoder.hasIdentity(value)) {
            Json.string(out, token(active, (ObjectReference) value));
        } else {
            out.append("null");
        }
        out.append(']');
    }

    /** The reference's token in the call: a1, a2, ... by first appearance. */
    private static String token(Active active, ObjectReference reference) {
        return active.tokens.computeIfAbsent(reference.uniqueID(),
                k -> "a" + (active.tokens.size() + 1));
    }

    private void emit(StringBuilder record) {
        channel.line(record);
    }
}

import com.sun.jdi.Bootstrap;
import com.sun.jdi.VirtualMachine;
import com.sun.jdi.connect.Connector;
import com.sun.jdi.connect.ListeningConnector;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * execbench's Java recorder: {@code java Recorder CONFIG -- COMMAND...} runs the test
 * command with every JVM it starts attached to this one through JDWP (the agent named in
 * {@code JAVA_TOOL_OPTIONS} connects back to a socket this program listens on at
 * 127.0.0.1), records the project's own methods of each (a {@link Session} per JVM) on the
 * channel the driver passed as an inherited file descriptor, and ends with the end record:
 * the tests JUnit reported as passed and run, and the command's exit status, which is also
 * this program's.
 *
 * <p>The command's output passes through, read for JUnit's summaries (JUnit 4's
 * {@code OK (N tests)} and {@code Tests run: N,  Failures: F}, the JUnit 5 console's
 * {@code N tests successful} and {@code N tests found}), summed over its JVMs.
 */
public final class Recorder {
    private static final Pattern OK = Pattern.compile("^OK \\((\\d+) tests?\\)");
    private static final Pattern RUN = Pattern.compile("^Tests run: (\\d+),\\s+Failures: (\\d+)");
    private static final Pattern FOUND = Pattern.compile("\\[\\s*(\\d+) tests found\\s*\\]");
    private static final Pattern SUCCESSFUL =
            Pattern.compile("\\[\\s*(\\d+) tests successful\\s*\\]");

    /** The driver's bounds. */
    record Bounds(long maxEvents, int maxCalls, int maxDepth, int maxNodes) {
    }

    private Recorder() {
    }

    public static void main(String[] args) throws Exception {
        int split = Arrays.asList(args).indexOf("--");
        if (split != 1 || args.length < 3) {
            System.err.println("usage: Recorder CONFIG -- COMMAND...");
            System.exit(2);
        }
        Json.Config config = new Json.Config(Path.of(args[0]));
        Path root = Path.of(config.text("root"));
        Bounds bounds = new Bounds(config.number("max_events", 1_000_000),
                (int) config.number("max_calls_seen", 100),
                (int) config.number("max_depth", 3),
                (int) config.number("max_value_nodes", 200));
        Json.Channel channel = new Json.Channel(new BufferedOutputStream(
                descriptor((int) config.number("records_fd", -1)), 1 << 16));
        Sources sources = new Sources(root, config.texts("files"));
        List<String> command = Arrays.asList(args).subList(2, args.length);
        int[] tests = new int[2];
        int exit = run(command, sources, root, channel, bounds, tests);
        StringBuilder end = new StringBuilder("{\"kind\":\"end\",\"tests\":[");
        end.append(tests[0]).append(',').append(tests[1]).append("],\"exit\":").append(exit)
                .append('}');
        channel.line(end);
        channel.close();
        System.exit(exit);
    }

    /** An inherited file descriptor as a stream (no path: it is a pipe). */
    private static OutputStream descriptor(int fd) throws ReflectiveOperationException {
        if (fd < 3) {
            throw new IllegalArgumentException("the config names no records_fd");
        }
        FileDescriptor handle = new FileDescriptor();
        java.lang.reflect.Field field = FileDescriptor.class.getDeclaredField("fd");
        field.setAccessible(true);
        field.setInt(handle, fd);
        return new FileOutputStream(handle);
    }

    private static int run(List<String> command, Sources sources, Path root,
                           Json.Channel channel, Bounds bounds, int[] tests)
            throws Exception {
        ListeningConnector connector = null;
        for (ListeningConnector candidate : Bootstrap.virtualMachineManager()
                .listeningConnectors()) {
            if (candidate.transport().name().equals("dt_socket")) {
                connector = candidate;
            }
        }
        if (connector == null) {
            throw new IllegalStateException("this JDK has no socket transport for JDWP");
        }
        Map<String, Connector.Argument> arguments = connector.defaultArguments();
        arguments.get("localAddress").setValue("127.0.0.1");
        arguments.get("port").setValue("0");
        String address = connector.startListening(arguments);
        AtomicInteger calls = new AtomicInteger();
        List<Thread> sessions = new ArrayList<>();
        AtomicBoolean ended = new AtomicBoolean();
        ListeningConnector listening = connector;
        Thread acceptor = new Thread(() -> {
            while (true) {
                VirtualMachine vm;
                try {
                    vm = listening.accept(arguments);
                } catch (Exception e) {
                    if (ended.get()) {
                        return;  // listening stopped: the command ended
                    }
                    continue;  // one connection's failed handshake (not a JVM's agent)
                }
                Thread session = new Thread(new Session(vm, sources, root, channel, calls,
                        bounds));
                synchronized (sessions) {
                    sessions.add(session);
                }
                session.start();
            }
        });
        acceptor.start();
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        String options = "-agentlib:jdwp=transport=dt_socket,server=n,suspend=y,address="
                + address.replaceFirst("^[^:]*:", "127.0.0.1:");
        builder.environment().merge("JAVA_TOOL_OPTIONS", options, (a, b) -> a + " " + b);
        Process process = builder.start();
        process.getOutputStream().close();
        PrintStream out = new PrintStream(new BufferedOutputStream(System.out), false,
                StandardCharsets.UTF_8);
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(
                process.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = reader.readLine()) != null) {
                out.println(line);
                out.flush();
                count(line, tests);
            }
        }
        out.flush();
        int exit = process.waitFor();
        ended.set(true);
        connector.stopListening(arguments);
        acceptor.join();
        List<Thread> started;
        synchronized (sessions) {
            started = new ArrayList<>(sessions);
        }
        for (Thread session : started) {
            session.join();
        }
        return exit;
    }

    private static void count(String line, int[] tests) {
        Matcher m;
        if ((m = OK.matcher(line)).find()) {
            tests[0] += Integer.parseInt(m.group(1));
            tests[1] += Integer.parseInt(m.group(1));
        } else if ((m = RUN.matcher(line)).find()) {
            int run = Integer.parseInt(m.group(1));
            tests[0] += Math.max(0, run - Integer.parseInt(m.group(2)));
            tests[1] += run;
        } else if ((m = SUCCESSFUL.matcher(line)).find()) {
            tests[0] += Integer.parseInt(m.group(1));
        } else if ((m = FOUND.matcher(line)).find()) {
            tests[1] += Integer.parseInt(m.group(1));
        }
    }
}

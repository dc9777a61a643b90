import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The project's own sources: which classes are the project's (a class is, when its
 * package and source file name lead to exactly one of the project's .java files outside
 * its tests), and where each method's text starts and ends in its file.
 *
 * <p>The debugger knows a method's code lines only; its header and closing brace are found
 * in the text: the header is the nearest line at or above the first code line that names
 * the method before a parenthesis, the end is the brace that closes the first one after
 * that header, strings, characters and comments skipped.
 */
final class Sources {
    private static final Pattern PACKAGE = Pattern.compile("^\\s*package\\s+([\\w.]+)\\s*;",
            Pattern.MULTILINE);
    private static final Pattern COMMENTS = Pattern.compile("//[^\\n]*|/\\*.*?\\*/",
            Pattern.DOTALL);
    private static final Pattern RETURN = Pattern.compile("(?<![\\w$])return(?![\\w$])");
    private static final Set<String> TEST_FOLDERS = Set.of("test", "tests", "testing");
    private static final long MAX_FILE_BYTES = 4L << 20;

    private final Map<String, String> files = new HashMap<>();
    private final Set<String> ambiguous = new HashSet<>();
    private final Set<String> packages = new TreeSet<>();
    private final Set<String> topLevel = new TreeSet<>();
    private final Map<String, List<String>> texts = new HashMap<>();

    /** The project's files the driver listed (relative to {@code root}), tests left out. */
    Sources(Path root, List<String> listed) throws IOException {
        for (String relText : listed) {
            Path rel = Path.of(relText);
            Path path = root.resolve(rel);
            if (!relText.endsWith(".java") || isTest(rel) || !Files.isRegularFile(path)
                    || Files.size(path) > MAX_FILE_BYTES) {
                continue;
            }
            String text = Files.readString(path, StandardCharsets.ISO_8859_1);
            Matcher m = PACKAGE.matcher(COMMENTS.matcher(text).replaceAll(" "));
            String pkg = m.find() ? m.group(1) : "";
            String key = pkg + "/" + rel.getFileName();
            if (files.containsKey(key)) {
                ambiguous.add(key);
            }
            files.put(key, relText);
            String stem = rel.getFileName().toString().replaceFirst("\\.java$", "");
            if (pkg.isEmpty()) {
                topLevel.add(stem);
            } else {
                packages.add(pkg);
            }
        }
        ambiguous.forEach(files::remove);
    }

    /** A test's file: in a folder named test or tests, or named as JUnit's tests are. */
    static boolean isTest(Path rel) {
        for (int i = 0; i < rel.getNameCount() - 1; i++) {
            String part = rel.getName(i).toString();
            if (TEST_FOLDERS.contains(part) || part.startsWith(".")) {
                return true;
            }
        }
        String name = rel.getFileName().toString();
        return name.endsWith("Test.java") || name.endsWith("Tests.java")
                || name.startsWith("Test") || name.equals("package-info.java")
                || name.equals("module-info.java");
    }

    /** Class filters that cover every project class (and maybe a few others). */
    List<String> classFilters() {
        List<String> filters = new ArrayList<>();
        for (String pkg : packages) {
            filters.add(pkg + ".*");
        }
        for (String stem : topLevel) {
            filters.add(stem);
            filters.add(stem + "$*");
        }
        return filters;
    }

    /** The project file of a class, by its package and source file name; null if none. */
    String fileOf(String className, String sourceName) {
        int dot = className.lastIndexOf('.');
        String pkg = dot < 0 ? "" : className.substring(0, dot);
        return files.get(pkg + "/" + sourceName);
    }

    /** The method's first and last lines (header to closing brace), or null. */
    int[] span(Path root, String rel, String name, int firstCode, int lastCode) {
        List<String> lines = texts.computeIfAbsent(rel, r -> read(root.resolve(r)));
        if (lines.isEmpty() || firstCode < 1 || lastCode > lines.size()) {
            return null;
        }
        Pattern header = Pattern.compile("(?<![\\w$])" + Pattern.quote(name) + "\\s*\\(");
        for (int h = firstCode; h >= 1 && h > firstCode - 40; h--) {
            Matcher m = header.matcher(lines.get(h - 1));
            if (m.find()) {
                int end = closing(lines, h, m.end());
                return end >= lastCode ? new int[] {h, end} : null;
            }
        }
        return null;
    }

    /** The lines of {@code low..high} that may return: those whose text says
     * {@code return}, and the last (a void method's closing brace). */
    Set<Integer> returnLines(Path root, String rel, int low, int high) {
        List<String> lines = texts.computeIfAbsent(rel, r -> read(root.resolve(r)));
        Set<Integer> found = new HashSet<>();
        found.add(high);
        for (int n = low; n <= high && n <= lines.size(); n++) {
            if (RETURN.matcher(lines.get(n - 1)).find()) {
                found.add(n);
            }
        }
        return found;
    }

    private static List<String> read(Path path) {
        try {
            return Files.readAllLines(path, StandardCharsets.ISO_8859_1);
        } catch (IOException e) {
            return List.of();
        }
    }

    /** The line of the brace closing the first one at or after (line, column). */
    private static int closing(List<String> lines, int line, int column) {
        int depth = 0;
        boolean block = false;
        boolean opened = false;
        for (int n = line; n <= lines.size(); n++) {
            String text = lines.get(n - 1);
            for (int i = n == line ? column : 0; i < text.length(); i++) {
                char c = text.charAt(i);
                if (block) {
                    if (c == '*' && i + 1 < text.length() && text.charAt(i + 1) == '/') {
                        block = false;
                        i++;
                    }
                } else if (c == '/' && i + 1 < text.length() && text.charAt(i + 1) == '/') {
                    break;
                } else if (c == '/' && i + 1 < text.length() && text.charAt(i + 1) == '*') {
                    block = true;
                    i++;
                } else if (c == '"' || c == '\'') {
                    i = skipQuoted(text, i, c);
                } else if (c == '{') {
                    depth++;
                    opened = true;
                } else if (c == '}') {
                    depth--;
                    if (opened && depth == 0) {
                        return n;
                    }
                } else if (c == ';' && !opened) {
                    return -1;  // a declaration without a body
                }
            }
        }
        return -1;
    }

    private static int skipQuoted(String text, int start, char quote) {
        for (int i = start + 1; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '\\') {
                i++;
            } else if (c == quote) {
                return i;
            }
        }
        return text.length();
    }
}

"""Programs that read standard input and print, as contest sets hold them: each reads its
input its own way (``input()``, ``sys.stdin`` read whole, by line, as bytes, line by
line in a loop), and some end with ``exit()``, a ``main()`` behind a ``__main__`` guard,
or print with ``sep`` and ``end``. ``write_codemind`` lays them out as CodeMind does."""

from __future__ import annotations

from pathlib import Path

PROGRAMS: dict[str, tuple[str, list[str]]] = {
    "sum_first": ("n = int(input())\nxs = list(map(int, input().split()))\nprint(sum(xs[:n]))\n",
                  ["3\n1 2 3 4\n", "1\n9 9\n"]),
    "compare": ("a, b = map(int, input().split())\nif a > b:\n    print('first')\n"
                "elif a == b:\n    print('tie')\nelse:\n    print('second')\n",
                ["1 2\n", "3 3\n"]),
    "read_all": ("import sys\ndata = sys.stdin.read().split()\nprint(max(map(int, data)))\n",
                 ["4 8 1\n2\n"]),
    "readline": ("import sys\nname = sys.stdin.readline().strip()\nprint(f'Hello, {name}!')\n",
                 ["Ada\n"]),
    "bytes": ("import sys\nraw = sys.stdin.buffer.read()\nprint(len(raw.split()))\n",
              ["a b c\nd\n"]),
    "lines_loop": ("import sys\ntotal = 0\nfor line in sys.stdin:\n    total += int(line)\n"
                   "print(total)\n", ["1\n2\n3\n"]),
    "guarded_main": ("def main():\n    k = int(input())\n    print(k * k)\n\n\n"
                     "if __name__ == '__main__':\n    main()\n", ["7\n"]),
    "early_exit": ("n = int(input())\nif n < 0:\n    print('negative')\n    exit()\n"
                   "print('ok', n)\n", ["-4\n", "5\n"]),
    "sys_exit_zero": ("import sys\nw = input()\nif w == 'stop':\n    print('stopped')\n"
                      "    sys.exit(0)\nprint(w.upper())\n", ["stop\n", "go\n"]),
    "sep_end": ("a, b, c = input().split()\nprint(a, b, c, sep='-', end='!\\n')\n",
                ["x y z\n"]),
    "grid": ("h, w = map(int, input().split())\nrows = [input() for _ in range(h)]\n"
             "print(sum(row.count('#') for row in rows))\n", ["2 3\n#.#\n.##\n"]),
    "fizz": ("n = int(input())\nfor i in range(1, n + 1):\n    if i % 15 == 0:\n"
             "        print('FizzBuzz')\n    elif i % 3 == 0:\n        print('Fizz')\n"
             "    elif i % 5 == 0:\n        print('Buzz')\n    else:\n        print(i)\n",
             ["5\n", "15\n"]),
    "gcd": ("import math\na, b = map(int, input().split())\nprint(math.gcd(a, b))\n",
            ["12 18\n"]),
    "reverse_words": ("print(' '.join(reversed(input().split())))\n", ["one two three\n"]),
    "count_chars": ("from collections import Counter\ns = input()\n"
                    "c = Counter(s)\nbest = max(sorted(c), key=lambda k: c[k])\n"
                    "print(best, c[best])\n", ["abracadabra\n"]),
    "matrix_sum": ("n = int(input())\nm = [list(map(int, input().split())) for _ in range(n)]\n"
                   "print(sum(m[i][i] for i in range(n)))\n", ["2\n1 2\n3 4\n"]),
    "binary": ("n = int(input())\nbits = ''\nwhile n > 0:\n    bits = str(n % 2) + bits\n"
               "    n //= 2\nprint(bits or '0')\n", ["6\n", "0\n"]),
    "palindrome": ("s = input().strip().lower()\nprint('Yes' if s == s[::-1] else 'No')\n",
                   ["Level\n", "abc\n"]),
    "prefix_sums": ("xs = list(map(int, input().split()))\nacc = 0\nout = []\nfor x in xs:\n"
                    "    acc += x\n    out.append(acc)\nprint(*out)\n", ["1 2 3\n"]),
    "sorted_unique": ("n = int(input())\nvals = sorted(set(int(input()) for _ in range(n)))\n"
                      "for v in vals:\n    print(v)\n", ["4\n3\n1\n3\n2\n"]),
    "min_cost": ("def cost(a, b):\n    return abs(a - b)\n\n\n"
                 "xs = list(map(int, input().split()))\n"
                 "print(min(cost(x, y) for x in xs for y in xs if x != y))\n", ["5 1 9 4\n"]),
    "queries": ("q = int(input())\nstack = []\nfor _ in range(q):\n    op = input().split()\n"
                "    if op[0] == 'push':\n        stack.append(int(op[1]))\n    else:\n"
                "        print(stack.pop() if stack else 'empty')\n",
                ["4\npush 1\npush 2\npop\npop\n", "1\npop\n"]),
}
"""Each program's code and the texts its tests feed it: 22 programs, 30 tests."""


def write_codemind(folder: Path) -> Path:
    """The programs laid out as CodeMind's sets are: ``NAME/main.py``, the first test as
    ``input.txt`` and the others as ``all_tests/input/K_input.txt``."""
    for name, (code, tests) in PROGRAMS.items():
        root = folder / name
        root.mkdir(parents=True)
        (root / "main.py").write_text(code, encoding="utf-8")
        (root / "input.txt").write_text(tests[0], encoding="utf-8")
        if len(tests) > 1:
            (root / "all_tests" / "input").mkdir(parents=True)
            for number, text in enumerate(tests[1:], 1):
                (root / "all_tests" / "input" / f"{number}_input.txt").write_text(
                    text, encoding="utf-8")
    return folder

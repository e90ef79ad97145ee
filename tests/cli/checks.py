"""The check-and-report harness of the Python tests under tests/cli (no test framework on the
machines): `check = Checks("name")`, then `check(condition, what)` for each expectation, and
`return check.exit_code()` (0 when all held; each failure printed)."""


class Checks:
    def __init__(self, name):
        self.name, self.failures = name, []

    def __call__(self, cond, what):
        if not cond:
            self.failures.append(what)

    def exit_code(self):
        for f in self.failures:
            print("FAIL:", f)
        print(f"{self.name}: " + ("ok" if not self.failures else f"{len(self.failures)} failed"))
        return 1 if self.failures else 0

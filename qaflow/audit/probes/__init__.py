"""The audit's probes after the build, each a generator over a `TaskRun` (`context`): settling and
confirming the oracle (`settling`), code mutants (`code_mutants`), the task's own disabled tests
(`enabled_tests`), the exploit battery and harness holes (`exploit_battery`), every probe at each step of a
multi-step task (`multi_step`, with `step_views`); the build's finding (`build`) and findings that belong to
the machine (`machine`). The driver that runs them is `qaflow.audit.runner`."""

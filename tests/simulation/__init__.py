"""Deterministic simulation of concurrent writes: every interleaving, every crash point, on the real code.

Several clients (threads, each standing for a process) call the library's real
write paths (``Model.save()``, a user's ``TransactWrite``, ``Model.save_all()``)
against moto's in-process DynamoDB. Below the library, in
botocore, every DynamoDB request stops at a boundary until the scheduler lets
exactly one client send its request and run on to its next boundary, with or
without a fault: a crash before the request is sent, an answer lost after the
request was applied, a throttling answer, a transaction conflict. A run is a
deterministic function of these choices, so it can be enumerated, sampled from
a seed, and replayed.

Modules:

- :mod:`~tests.simulation.scheduler`: the botocore hook, the scheduler, the
  faults, and the per-client process memory;
- :mod:`~tests.simulation.explore`: one run, depth-first enumeration, seeded
  random runs, bounds;
- :mod:`~tests.simulation.checker`: the invariants, and the library bugs
  already known;
- :mod:`~tests.simulation.world`: the models of each mode (fast, gapless,
  block of 2, query strategy; the other write paths in fast and gapless
  mode; blocks of 3 near ``autoinc_max``) on moto, reset and read back;
- :mod:`~tests.simulation.workloads`: what one client operation does on each
  write path (a save; a transaction committed, cancelled or abandoned; a
  batch, and a batch that cannot be stored);
- :mod:`~tests.simulation.jobs`: explorations spread over worker processes;
- :mod:`~tests.simulation.settings`: the environment variables.

Running it::

    python -m pytest tests/simulation -s          # the default run; -s prints what was explored
    # replay one seed, one schedule:
    SIM_SEED=123 python -m pytest 'tests/simulation/test_random.py::test_random_schedules_keep_the_invariants[gapless]'
    SIM_PATH=0,4,2 python -m pytest \
        'tests/simulation/test_exhaustive.py::test_every_schedule_keeps_the_invariants[fast]'

(a failing run prints the exact command, with the bounds it ran under). The
modes are ``fast``, ``gapless``, ``block``, ``query`` (``Model.save()``),
``tx-fast``, ``tx-gapless`` (a user's ``TransactWrite``), ``bulk-fast``,
``bulk-gapless`` (``save_all()``), ``block-max`` and ``block-max-2`` (blocks
of 3 with ``autoinc_max`` 4 and 2), ``cycle`` and ``cycle-gapless`` (a CYCLE
sequence of 1..2, so saves come round to stored values).

Larger explorations::

    SIM_RANDOM_RUNS=40000 SIM_SEED_START=100000 python -m pytest tests/simulation -k random -s
    SIM_PREEMPTIONS=3 SIM_BUDGET=3 python -m pytest tests/simulation -k every_schedule -s
    SIM_PREEMPTIONS=none SIM_BUDGET=none SIM_FAULTS=0 python -m pytest tests/simulation -k every_schedule -s
    SIM_CLIENTS=4 SIM_SAVES=2 SIM_PREEMPTIONS=2 python -m pytest tests/simulation -k every_schedule -s

``SIM_WORKERS`` sets the number of worker processes (default: the CPUs, at
most 4; 1 runs everything in the test process).
"""

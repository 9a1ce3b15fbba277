"""The instructor's side of the checks: what runs on the instructor's machine, never in a learner's kernel.

- grading: :mod:`.grading` re-runs each learner's recorded check on evidence rebuilt from their seed
  (:mod:`.rebuilt`), inside :mod:`.regrade_guard`'s fence; :mod:`.copies` and :mod:`.solution_runs` flag copied
  work and runs of the shipped solutions. It opens no learner file as code and follows no learner path.
- the class: :mod:`.classview` (the live view) and :mod:`.class_cli` (``lumikit class``).
- the workbook: :mod:`.generate` (exercises from solutions), :mod:`.pairing` (``.py``/``.ipynb`` pairs),
  :mod:`.notebook` (runs one notebook), :mod:`.probe` and :mod:`.leaks` (known-wrong answers, answers given away),
  :mod:`.verify` (``lumikit verify``), :mod:`.notes` (instructor notes) and :mod:`.handout` (the learners' copy).

The learner's side (``lumikit.checks`` and its ``mNN`` modules) never imports this package; this package imports the
learner's side (the checks it regrades, the record format it reads). ``tests/checks/test_layout.py`` holds both rules.
"""

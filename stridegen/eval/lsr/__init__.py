"""STRIDE-QA localization evaluation: ``answer_parser`` (answer grammars: ``official_grammar``,
``robust_grammar``; their kinds, outcomes and units in ``answer_values``), ``tolerance`` (success rules and
profiles), ``data`` (item and result arrays, JSONL readers), ``algo`` (LSR, MLSR, TLC over item arrays),
``evaluate`` (judge and aggregate), ``items`` (items from records and predictions), ``dataset`` (records of a
stridegen dataset), ``bench`` (items of official STRIDE-QA-Bench responses), ``inputs`` (the items of one run's
inputs) and ``report`` (JSON, Markdown, plots). The command ``stridegen eval lsr`` is ``stridegen.cli.eval_lsr``."""

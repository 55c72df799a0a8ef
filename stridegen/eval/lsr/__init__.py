"""STRIDE-QA localization evaluation: ``answer_parser`` (answer grammars), ``tolerance`` (success rules and
profiles), ``algo`` (LSR, MLSR, TLC over item arrays), ``dataset`` (items of a stridegen dataset), ``bench``
(items of official STRIDE-QA-Bench responses), ``report`` (JSON, Markdown, plots) and ``cli``
(``stridegen eval lsr``)."""

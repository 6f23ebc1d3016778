"""English-only word heuristics the stages share: words, stop words, stems and weights
(``english``), and the parts of an answer key (``answer_keys``)."""

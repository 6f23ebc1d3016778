"""What every stage shares: the data model (``models``), the one settings table
(``settings``), the metrics' names (``metrics``), the three roles' models (``judges``),
the errors a dialogue ends with (``errors``) and the prompt ``templates``."""

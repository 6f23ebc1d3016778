"""What every stage shares: the data model (``models``), the one settings table
(``settings``) and its values that have a form of their own (``forms``), the metrics' names
(``metrics``), the three roles' models (``judges``), the errors a dialogue ends with
(``errors``) and the prompt ``templates``."""

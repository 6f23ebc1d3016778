"""The ``calibrate`` command's work, outside the engine: a judge model measured on the
labelled ``cases`` (``measure``, by ``agreement``; its own follow-up messages in
``own_messages``), what that will cost (``cost``), and the profile files it writes and a run
reads (``files``). The profile a run judges by is :mod:`pytest_ragdive.engine.base.profile`."""

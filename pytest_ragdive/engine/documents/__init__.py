"""What conversations are about: source documents read from files (``loading``), groups of
documents one conversation moves between (``groups``), and real users' first messages
(``openers``)."""

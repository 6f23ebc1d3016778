"""What each judge model is trusted with: its measured profile (``profile``; the shipped
ones in ``profiles.json``, user ones in files: ``files``), and the calibration that measures
one (``calibration`` on the labelled ``cases``, by ``agreement``; its prompts written by the
generator in ``own_messages``; its cost in ``cost``)."""

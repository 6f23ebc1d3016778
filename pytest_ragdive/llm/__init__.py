"""Model access: the one client (``client``), the response cache (``cache``), the usage ledger
(``usage``) and the providers served in process (the ``embedded`` model, the ``scripted`` test
provider). Nothing here knows about dialogues or pytest.

Importing this package sets the offline defaults of the libraries it drives, unless the
environment says otherwise: pytest loads it with the plugin, before any conftest, so a test
run never asks the network for litellm's price list whatever a conftest imports first. A
script that imports litellm itself should import ``pytest_ragdive`` first.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")

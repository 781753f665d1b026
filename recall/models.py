"""No models: the index is plain SQL (``recall.index``). The module exists so that Django
sends this app ``post_migrate`` (``apps.py``)."""

"""What the agents' parts share, one module per part they serve: `rules.py` (sizes, text and
tool arguments of JSON values, and the stubs of a superseded line), `home.py` (an agent's
store and the folders it picks) and `hooks.py` (the hook an agent runs when a session ends).
These import no agent package; every agent package may import them.
"""

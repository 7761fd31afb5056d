"""OpenAI Codex CLI, one module per part (every agent has the same parts, behind
`formats/base.py`'s interface; `formats/__init__.py` is the one registry):

- `context.py`: what the agent resumes with (the conversation it rebuilds and sends)
- `home.py`: where the agent keeps its store
- `hooks.py`: its lifecycle hook and how to install one
- `rules.py`: its compress rules and `FORMAT`, the object the registry loads
- `summary.py`: the summary record it appends
- `view.py`: each line in neutral terms
"""

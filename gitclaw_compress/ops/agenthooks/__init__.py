"""Our hook in each agent's own lifecycle: install, uninstall, how it stands, and what it does
when the agent runs it (docs/agent-hooks.md).

Each format says where its agent's hook goes and how to write it (`Format.lifecycle_hook`);
this package reads and writes the files. `install` records, in the tool's data folder, the
bytes it changed (where, what was there, what it wrote: never a copy of the whole file), so
that `uninstall` puts back every byte it replaced, and deletes a file or folder it created.
When the file changed since, `uninstall` still takes ours out and keeps the rest.

The hook itself returns at once: it starts the pass (`gitclaw-compress stores AGENT`)
detached, with its output in `agent-hooks/hooks.log`, unless the last one still runs (a
lock the pass holds), and for Codex runs the `notify` program ours replaced. It records the
interpreter `install` ran from, so it works without PATH.

One module per part, each imported by what uses it (the hook an agent runs loads `run` and
what it needs, not install's or doctor's parts):

- `files.py`: where the hooks keep their files, the words of the log, whole-file writes
- `records.py`: what install changed in each file, to undo it
- `install.py`: install and uninstall
- `state.py`: how each agent's hook stands, for doctor
- `run.py`: the hook an agent runs, and the pass it starts
"""

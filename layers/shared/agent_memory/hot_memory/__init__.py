"""Hot memory: the project's capped Markdown document of standing rules and context.

- ``document``: the one token measure and cap check, the read view, line provenance and ids;
- ``markdown``: the editor's Markdown read back into lines;
- ``editor``: get / replace the document, the kill switch, If-Match / ETag, the commit and audit
  record every admin write goes through;
- ``revisions``: stored versions, their diffs, restoring one;
- ``review``: the queue of distillation candidates an admin decides;
- ``statements`` and ``analysis``: the distiller's rules (durable statements in user messages, and
  how two statements compare); ``merge``: applying them, and compacting the document.
"""

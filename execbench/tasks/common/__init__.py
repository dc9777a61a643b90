"""What more than one task family uses: reading answers (``extract``, ``answers``), showing
code (``code``), whether a call returned a value to ask about (``returns``) and CodeSense's
abstract values (``abstract``). Nothing here registers a task, so a family can import any of
it without pulling in another family."""

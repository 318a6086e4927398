"""The SSH admin console (docs/admin.md): ``commands`` parses and formats the console's commands
(pure, no Twisted), ``daemon`` carries them out on the running daemon, ``ssh`` is the
twisted.conch server (keys, console, exec, manhole) and ``client`` the ``gamed admin`` side."""

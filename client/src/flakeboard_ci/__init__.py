"""The CI client's source, a module per idea. CI runs (and the board serves) the one file
client/build.py assembles from these modules: client/flakeboard_ci.py."""

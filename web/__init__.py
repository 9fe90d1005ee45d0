"""The web plumbing both apps share: page access and rendering, the API's token auth and
error shape, and the management commands' suite lookup. No models and no app of its own:
it sits below ``ledger``'s and ``runs``' views, API and commands, above ``ledger``'s
models, and imports nothing from ``runs``."""

"""A fake LLM server shipped with tbrl: a loopback server speaking the Anthropic and OpenAI
protocols, for tests and offline demos (no mocks)."""

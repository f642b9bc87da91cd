"""The OpenAI-compatible chat proxy with an explicit, traced memory tool round."""

__all__: list[str] = []

"""Model providers: one streamed model call with tools."""

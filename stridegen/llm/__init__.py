"""Chat models over HTTP, shared by the judges and `stridegen predict`: the OpenAI-compatible client (retries,
Retry-After, timeouts, rate limits, cost accounting), the reply and error types, and the redaction that keeps
secrets off the disk."""

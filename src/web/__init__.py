"""What both HTTP shells (the REST API and the proxy) share: strict request bodies and the
status and body of every error."""

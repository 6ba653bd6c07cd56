"""Service functions: the server's logic, free of request handling."""

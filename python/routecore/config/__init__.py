"""What a config file is: route and tool specs, the typed schema, and reading files safely."""

"""What changes a serving router: live updates of routes and tools, and learned exemplars."""

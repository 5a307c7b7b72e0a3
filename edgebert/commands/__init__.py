"""One module per CLI verb; each defines a command class with name, help, add_arguments and run."""

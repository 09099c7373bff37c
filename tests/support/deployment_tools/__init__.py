"""The files the deployment tools write for the agents, rendered from the tools' own templates (README.md here)."""

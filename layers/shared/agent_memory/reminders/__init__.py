"""Reminders the users schedule through the assistant (the cron skill)."""

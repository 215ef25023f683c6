"""The line-PC side: watch camera folders, inspect, store results, deliver alerts."""

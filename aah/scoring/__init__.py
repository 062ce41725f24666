"""Scoring: grader, metrics, behaviour classes, error patterns, reports."""

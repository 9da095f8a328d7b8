"""The HTML report and leaderboard pages (Jinja2, autoescaped) and the figures they show.

Everything here reads the results store and draws; nothing runs a model or imports torch.
"""

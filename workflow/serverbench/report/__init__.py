"""Stage 5, report: the Answers, the charts, the index page and its screenshots."""

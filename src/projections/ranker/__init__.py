"""The learned ranker: training examples folded from feedback, the model, propensities."""

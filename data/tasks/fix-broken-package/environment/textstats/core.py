def tokenize(text):
    """Words are maximal runs of letters, digits and apostrophes, lowercased."""
    return [w.lower() for w in text.split(" ")]


def average_length(words):
    """Mean word length, 0.0 for no words."""
    return sum(len(w) for w in words) // len(words)

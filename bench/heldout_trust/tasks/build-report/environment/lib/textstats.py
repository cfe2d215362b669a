def words(text):
    return text.split()


def mean_word_length(text):
    ws = words(text)
    return sum(len(w) for w in ws) / len(ws) if ws else 0.0

"""The text the language model is fine-tuned on: short made-up movie reviews, shipped with the package.

The course's original run fine-tunes GPT-neo on IMDb reviews; downloading IMDb is not possible offline, so the
workbook ships ``data/reviews.txt``, generated once from the templates below (``python -m
lumikit.workloads.corpus`` regenerates it; a test keeps the file and the generator in step).
"""
from __future__ import annotations

import random
from pathlib import Path

CORPUS_PATH = Path(__file__).with_name("data") / "reviews.txt"
DEFAULT_COUNT = 600
DEFAULT_SEED = 2024

_TITLE_ADJ = ["Silent", "Last", "Crimson", "Frozen", "Hidden", "Broken", "Golden", "Electric", "Midnight", "Lost",
              "Paper", "Iron", "Velvet", "Distant", "Burning", "Quiet", "Wild", "Glass", "Northern", "Endless"]
_TITLE_NOUN = ["Harbour", "Orbit", "Garden", "Signal", "Kingdom", "Winter", "Algorithm", "Lighthouse", "Compiler",
               "Summit", "Archive", "Voyage", "Cluster", "River", "Detective", "Forest", "Node", "Parade", "Bridge",
               "Circuit"]
_GENRES = ["thriller", "comedy", "drama", "science fiction film", "documentary", "musical", "heist movie",
           "romance", "horror film", "animated feature", "western", "mystery"]
_SUBJECTS = ["a retired engineer", "two rival chefs", "a young astronomer", "a tired detective", "a family of five",
             "a lonely robot", "a group of students", "an ambitious mayor", "a travelling circus", "a data scientist",
             "a ship's crew", "an old lighthouse keeper"]
_GOALS = ["who must finish one last job", "trying to save a failing bakery", "racing against a blizzard",
          "who discover a strange signal", "searching for a missing sister", "stuck on a remote island",
          "who build a supercomputer in a barn", "hiding a secret from the whole town",
          "who train a model for a week", "chasing an impossible dream"]
_POSITIVE = {
    "opening": ["I loved every minute of", "What a pleasant surprise", "I went in with low hopes for",
                "Easily the best film I have seen this year is", "My whole family enjoyed"],
    "praise": ["The acting is warm and believable.", "The soundtrack is beautiful and never too loud.",
               "The script is sharp and often very funny.", "The photography is stunning, especially at night.",
               "The pacing is tight and the ending lands perfectly.", "The lead gives a brave, honest performance.",
               "Every supporting character gets a moment to shine.", "The dialogue feels natural and clever."],
    "closing": ["Highly recommended.", "I would happily watch it again.", "Go and see it on the big screen.",
                "A small gem that deserves a bigger audience.", "Bring tissues and a friend."],
    "scores": [7, 8, 9, 10],
}
_NEGATIVE = {
    "opening": ["I really wanted to like", "It pains me to say this about", "I almost walked out of",
                "Nobody warned me how dull", "I expected much more from"],
    "praise": ["The acting is wooden and the jokes fall flat.", "The plot makes no sense after the first hour.",
               "The soundtrack drowns out half of the dialogue.", "The pacing is slow and the ending is rushed.",
               "The lead looks bored in every scene.", "The effects look cheap and the editing is messy.",
               "The characters are thin and forgettable.", "The story borrows everything and adds nothing."],
    "closing": ["Skip it.", "Wait until it is free on television.", "Two hours I will not get back.",
                "A waste of a good idea.", "Not recommended."],
    "scores": [1, 2, 3, 4],
}
_MIXED = {
    "opening": ["I have mixed feelings about", "There is a good film hiding inside", "I am still unsure about",
                "Parts of it work in"],
    "praise": ["The first half is gripping, the second half drags.", "The acting is strong but the script is weak.",
               "The photography is lovely, the story less so.", "Some jokes land, many do not.",
               "The ending is bold but not earned."],
    "closing": ["Worth a look if you like the genre.", "Watch it with modest expectations.",
                "Not bad, not great.", "A curious, uneven film."],
    "scores": [5, 6],
}


def generate_reviews(count: int = DEFAULT_COUNT, seed: int = DEFAULT_SEED) -> list[str]:
    """``count`` one-line reviews, the same list for the same seed (pure: only ``random.Random(seed)``)."""
    rng = random.Random(seed)
    reviews = []
    for _ in range(count):
        tone = rng.choices([_POSITIVE, _NEGATIVE, _MIXED], weights=[5, 4, 2])[0]
        title = f"The {rng.choice(_TITLE_ADJ)} {rng.choice(_TITLE_NOUN)}"
        opening = rng.choice(tone["opening"])
        genre = rng.choice(_GENRES)
        plot = f"It is a {genre} about {rng.choice(_SUBJECTS)} {rng.choice(_GOALS)}."
        remarks = " ".join(rng.sample(tone["praise"], k=rng.randint(1, 3)))
        score = rng.choice(tone["scores"])
        reviews.append(f"{opening} \"{title}\". {plot} {remarks} {rng.choice(tone['closing'])} {score}/10.")
    return reviews


def load_corpus(path: Path | None = None) -> str:
    """The shipped reviews as one text, one review per line."""
    return Path(path or CORPUS_PATH).read_text(encoding="utf-8")


def render_corpus(reviews: list[str]) -> str:
    """The file form of a list of reviews."""
    return "\n".join(reviews) + "\n"


if __name__ == "__main__":  # regenerate the shipped file
    CORPUS_PATH.parent.mkdir(parents=True, exist_ok=True)
    CORPUS_PATH.write_text(render_corpus(generate_reviews()), encoding="utf-8")
    print(f"wrote {CORPUS_PATH} ({CORPUS_PATH.stat().st_size} bytes)")

"""Material for a transcription test (`listen sentences`): semantically unpredictable sentences (SUS; Benoît,
Grice & Hazan 1996), common words in grammatical but meaningless combinations, so that context cannot fill in what
was not heard; and, as a control for a predictable set, the same sentences with their words shuffled.

Benoît's five structures, each filled from lists of common one- and two-syllable words drawn with a seed:
- intransitive: The table walked through the blue truth.
- transitive: The strong way drank the day.
- imperative: Draw the house and the fact.
- question: How does the day love the bright word?
- relative: The plane closed the fish that lived."""
from __future__ import annotations

import random

NOUNS = ("table truth way day house fact plane fish word chair road song door tree cloud stone river king paper "
         "window garden letter voice hand night bread dream horse shoe wall boat field glass coat rain clock bird "
         "light milk street ring").split()
ADJECTIVES = ("blue strong bright green quiet heavy late warm empty small sharp round soft dark plain brave cold "
              "sweet thin loud").split()
INTRANSITIVE = "walked slept laughed fell lived sang waited smiled grew died arrived swam".split()
TRANSITIVE = "drank closed loved found held wrote built washed carried opened broke painted".split()
TRANSITIVE_BASE = "drink close love find hold write build wash carry open break paint".split()
PREPOSITIONS = "through under near behind beside across over into".split()
QUESTIONS = "how where when why".split()


def one(rng: random.Random) -> str:
    """One SUS in a structure drawn by `rng`."""
    noun, adjective = (lambda: rng.choice(NOUNS)), (lambda: rng.choice(ADJECTIVES))
    structure = rng.randrange(5)
    if structure == 0:
        words = ["the", noun(), rng.choice(INTRANSITIVE), rng.choice(PREPOSITIONS), "the", adjective(), noun()]
        end = "."
    elif structure == 1:
        words = ["the", adjective(), noun(), rng.choice(TRANSITIVE), "the", noun()]
        end = "."
    elif structure == 2:
        words = [rng.choice(TRANSITIVE_BASE), "the", noun(), "and", "the", noun()]
        end = "."
    elif structure == 3:
        words = [rng.choice(QUESTIONS), "does", "the", noun(), rng.choice(TRANSITIVE_BASE), "the", adjective(),
                 noun()]
        end = "?"
    else:
        words = ["the", noun(), rng.choice(TRANSITIVE), "the", noun(), "that", rng.choice(INTRANSITIVE)]
        end = "."
    return sentence(words, end)


def sentence(words: list[str], end: str = ".") -> str:
    text = " ".join(words)
    return text[0].upper() + text[1:] + end


def unpredictable(n: int, seed: int) -> list[str]:
    """n different SUS, the same for the same seed."""
    rng, out = random.Random(seed), []
    while len(out) < n:
        made = one(rng)
        if made not in out:
            out.append(made)
    return out


def shuffled(texts: list[str], seed: int) -> list[str]:
    """Each sentence's words in an order drawn by `seed` (its punctuation dropped, a full stop at its end): the
    words a listener hears are the same, what the sentence means is gone."""
    rng, out = random.Random(seed), []
    for text in texts:
        words = [w.strip(".,;:!?\"'()").lower() for w in text.split()]
        words = [w for w in words if w]
        rng.shuffle(words)
        out.append(sentence(words) if words else text)
    return out

# SPDX-License-Identifier: Apache-2.0
"""Built-in texts: the calibration prompts (user turns, chat-formatted before use) and the fixed
evaluation text the quality report is teacher-forced over. Written for this project."""

CALIBRATION_PROMPTS = [
    "What is the capital of France, and what is it known for?",
    "Write a short poem about the sea at night.",
    "Explain in simple words how a refrigerator keeps food cold.",
    "Give me three tips for learning a new language.",
    "What is 17 times 23? Show your steps.",
    "Summarise the plot of a detective story in two sentences.",
    "Write a Python function that returns the largest number in a list.",
    "Why is the sky blue during the day and red at sunset?",
]

DEFAULT_PROMPT = "Explain in two sentences why the sky is blue."

EVALUATION_TEXT = """\
The old lighthouse stood at the end of a narrow spit of rock, and for more than a hundred years \
its lamp had turned every night, sweeping a pale beam across the water. The keepers came and \
went. Some stayed for a single winter and left as soon as the ice broke; others stayed for \
decades, learning the moods of the sea the way a farmer learns the weather. The last keeper was \
a quiet woman named Ada, who had grown up in the village on the mainland and had always wanted \
to live in the tower.

Her days followed a simple routine. In the morning she cleaned the great glass lens, polishing \
each prism until it shone. At noon she wrote in the logbook: the direction of the wind, the \
height of the waves, the ships that had passed. In the afternoon she mended whatever the salt \
air had broken, a hinge, a window frame, the handle of a bucket. When the sun went down she \
climbed the one hundred and twelve steps to the lamp room and lit the light.

Ships no longer needed the lighthouse as they once had. Satellites told every captain where he \
was to within a few metres, and radar showed the rocks long before anyone could see them. Still, \
Ada believed the light mattered. A machine can fail, she wrote in the logbook one stormy night, \
but a light that a person keeps is a promise. When the government finally decided to automate \
the station, she asked to stay on as a volunteer, and to everyone's surprise they agreed.

Years later, children from the village would row out on calm summer days to visit her. She \
showed them how the lens bent the light into a single bright beam, how the clockwork turned it, \
and how to read the barometer before a storm. Most of all she taught them to pay attention: to \
the colour of the sky, the smell of the wind, the sound the water made against the rocks. \
"The sea tells you everything," she said, "if you are patient enough to listen."
"""

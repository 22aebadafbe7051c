# SPDX-License-Identifier: Apache-2.0
"""Built-in texts: the calibration prompts (user turns, chat-formatted before use) and the fixed
evaluation passages the quality report is teacher-forced over, each on its own (a story, a
technical description, a dialogue, instructions: KL differences between two implementations of
one quantized model change sign from one text to another, so one text alone says little). Written
for this project."""

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

LIGHTHOUSE = """\
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

BICYCLE = """\
A bicycle is a simple machine, but it hides a surprising amount of engineering. The frame has to \
be stiff enough to carry the rider's weight and the forces of pedalling, yet light enough to \
lift with one hand. Most frames are built from two triangles: the front triangle, made of the \
top tube, the down tube and the seat tube, and the rear triangle, made of the chain stays and \
the seat stays. Triangles do not change shape when pushed, which is why they appear in bridges, \
cranes and roofs as well.

The drive train turns the motion of the legs into the motion of the wheel. The pedals turn the \
cranks, the cranks turn the chainrings, and the chain carries that motion to a set of sprockets \
on the rear hub. Gears let the rider trade speed for force. On a steep hill a small chainring \
and a large sprocket make each turn of the pedals easier but move the bicycle a shorter \
distance. On a flat road the opposite choice lets the rider go faster without spinning the legs \
wildly.

Brakes work by friction. Rim brakes squeeze pads against the edge of the wheel, while disc \
brakes squeeze pads against a metal rotor near the hub. Disc brakes keep working in the rain \
because the rotor sheds water quickly, and they do not wear out the rim. Tyres matter too: a \
wide tyre at low pressure grips loose ground and absorbs bumps, while a narrow tyre at high \
pressure rolls more easily on smooth roads.

Keeping a bicycle in good order takes little time. Clean and oil the chain every few weeks, \
check the tyre pressure before a long ride, and listen for new noises, because a creak or a \
click is often the first sign that a bolt has worked loose.
"""

ROAD_TRIP = """\
"Are you sure this is the right road?" Maria asked, looking at the map on her knees.

"No," said Tom. "But it is the only road, so it must be the right one."

She laughed and folded the map. Outside the car the fields were turning gold in the evening \
light, and a line of poplars marked the course of a river they had not seen for an hour. They \
had left the city before dawn, planning to reach the coast by lunch, but a closed bridge and a \
long detour had sent them inland instead.

"We could stop in the next village," she said. "There might be a place to eat."

"There might be a place to sleep, too. I do not want to drive these roads in the dark."

The next village turned out to be a handful of stone houses around a square with a fountain. An \
old man sat on a bench beside the fountain, feeding crumbs to a crowd of sparrows. Tom parked \
the car and walked over to him.

"Excuse me. Is there an inn here, or somewhere we could stay the night?"

The old man looked at him for a long moment, then pointed across the square to a house with \
green shutters. "Ask for Elena. Tell her Paolo sent you. She cooks better than anyone in the \
valley, and she will not charge you much if you praise the soup."

They did praise the soup, and they meant it. It was thick with beans and greens and tasted of \
smoke and rosemary. Later, sitting at the window of a small room under the roof, Maria watched \
the lights of the valley go out one by one and decided that the closed bridge had been the best \
thing that happened on the whole trip.
"""

BREAD = """\
How to bake a simple loaf of bread

You need five hundred grams of strong white flour, ten grams of salt, seven grams of dried yeast \
and about three hundred and fifty millilitres of warm water. A tablespoon of olive oil is \
optional but makes the crumb a little softer.

1. Mix the flour and the salt in a large bowl. Add the yeast on the other side of the bowl, \
because salt that touches yeast directly can slow it down.
2. Pour in most of the water and stir with a wooden spoon until a rough dough forms. Add the \
rest of the water a little at a time if dry flour remains at the bottom.
3. Turn the dough out onto a lightly floured surface and knead it for about ten minutes. Push it \
away with the heel of your hand, fold it back, turn it a quarter and repeat. The dough is ready \
when it feels smooth and springs back when you press it with a finger.
4. Put the dough back in the bowl, cover it with a damp cloth and leave it somewhere warm until \
it has doubled in size. This usually takes one to two hours, depending on the temperature of the \
room.
5. Knock the air out of the dough, shape it into a tight ball or a long oval, and place it on a \
baking tray dusted with flour. Cover it again and let it rise for another forty minutes.
6. Heat the oven to two hundred and twenty degrees. Slash the top of the loaf with a sharp \
knife, put a small tray of water on the bottom shelf to make steam, and bake for thirty to \
thirty five minutes.
7. The loaf is done when it is deep golden brown and sounds hollow when you tap the bottom. Let \
it cool on a rack for at least an hour before you cut it, or the inside will be gummy.

Common problems: if the bread is dense, the yeast may have been old or the dough may not have \
risen long enough. If the crust is pale, the oven was not hot enough. If the loaf spread out \
flat, the dough was too wet or it was not shaped tightly.
"""

EVALUATION_PASSAGES = [LIGHTHOUSE, BICYCLE, ROAD_TRIP, BREAD]

# Between passages in the cached evaluation.txt (a form feed on its own line; ts/apps/cli/quality.ts splits there).
EVALUATION_SEPARATOR = "\n\f\n"

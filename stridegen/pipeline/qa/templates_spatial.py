"""Question and answer phrasings of the spatial QA generator (``stridegen.pipeline.qa.spatial``), as data.

Slots: ``{a}`` and ``{b}`` are region names ("Region [3]"), ``{value}`` the canonical number string with its unit
("12.34 m", "-35 degrees", "11 o'clock"). Question templates of a two-region predicate name ``{a}`` before ``{b}``
(the item's ``region_ids`` are in naming order). Answer sets: ``"<predicate>:yes"`` / ``"<predicate>:no"`` for
yes/no predicates, ``"ego_left_right:left"`` / ``":right"`` for the direction word, ``"<predicate>"`` for numbers.
Answer templates hold no digits of their own, so the only number in an answer is ``{value}``.

Directions of the object-centric left/right predicates are the viewer's (camera image) left and right; front/behind
means nearer to / farther from the camera. Heading angles: 0 = straight ahead, positive counter-clockwise (to the
left). Clock directions: 12 o'clock = straight ahead, 3 o'clock = right.
"""

from __future__ import annotations

from stridegen.pipeline.qa.base import Phrasebook

# ------------------------------------------------------------------------------------------ object-centric, yes/no

_OBJECT_YES_NO_QUESTIONS: dict[str, tuple[str, ...]] = {
    "left_of": (
        "Is {a} to the left of {b}?",
        "From the camera's point of view, does {a} appear left of {b}?",
        "Looking at the image, is {a} positioned further left than {b}?",
        "Would you say {a} is located on the left side of {b} in this view?",
        "Does {a} lie on the left-hand side of {b}?",
        "In the picture, does {a} show up leftward of {b}?",
        "Relative to the viewer, is {a} situated left of {b}?",
        "Can you tell me whether {a} is more to the left than {b}?",
        "Seen through this camera, is {a} placed to the left of {b}?",
    ),
    "right_of": (
        "Is {a} to the right of {b}?",
        "From the camera's point of view, does {a} appear right of {b}?",
        "Looking at the image, is {a} positioned further right than {b}?",
        "Would you say {a} is located on the right side of {b} in this view?",
        "Does {a} lie on the right-hand side of {b}?",
        "In the picture, does {a} show up rightward of {b}?",
        "Relative to the viewer, is {a} situated right of {b}?",
        "Can you tell me whether {a} is more to the right than {b}?",
        "Seen through this camera, is {a} placed to the right of {b}?",
    ),
    "in_front_of": (
        "Is {a} in front of {b}?",
        "Is {a} closer to the camera than {b}?",
        "From the camera's viewpoint, does {a} stand before {b}?",
        "Would you say {a} is nearer to the viewer than {b} is?",
        "Does {a} come before {b} when you look into the scene?",
        "Is the distance from the camera to {a} shorter than to {b}?",
        "Looking at this picture, is {a} positioned ahead of {b}, on the camera's side?",
        "Can you confirm that {a} lies in the foreground relative to {b}?",
        "Is {a} less deep in the scene than {b}?",
    ),
    "behind": (
        "Is {a} behind {b}?",
        "Is {a} farther from the camera than {b}?",
        "From the camera's viewpoint, does {a} stand beyond {b}?",
        "Would you say {a} is more distant from the viewer than {b} is?",
        "Does {a} come after {b} when you look into the scene?",
        "Is the distance from the camera to {a} longer than to {b}?",
        "Looking at this picture, is {a} positioned past {b}, away from the camera?",
        "Can you confirm that {a} lies in the background relative to {b}?",
        "Is {a} deeper in the scene than {b}?",
    ),
    "bigger": (
        "Is {a} bigger than {b}?",
        "Does {a} take up more space than {b}?",
        "Would {a} be the larger object if put next to {b}?",
        "Would you say {a} has a greater volume than {b}?",
        "Is {a} physically larger than {b}?",
        "Is {a} bulkier than {b}?",
        "Does {a} outsize {b}?",
        "In terms of overall size, does {a} exceed {b}?",
    ),
    "smaller": (
        "Is {a} smaller than {b}?",
        "Does {a} take up less space than {b}?",
        "Would {a} be the smaller object if put next to {b}?",
        "Would you say {a} has a lower volume than {b}?",
        "Is {a} physically more compact than {b}?",
        "Is {a} less bulky than {b}?",
        "Is {a} outsized by {b}?",
        "In terms of overall size, does {a} fall short of {b}?",
    ),
    "taller": (
        "Is {a} taller than {b}?",
        "Does {a} stand higher than {b}?",
        "Would you say {a} has a greater height than {b}?",
        "Comparing heights, does {a} tower over {b}?",
        "Is {a} the taller one when set against {b}?",
        "Does the top of {a} reach higher above its base than {b} does?",
        "Measured from bottom to top, is {a} higher than {b}?",
        "Can you confirm that {a} is of greater stature than {b}?",
    ),
    "shorter": (
        "Is {a} shorter than {b}?",
        "Does {a} stand lower than {b}?",
        "Would you say {a} has a smaller height than {b}?",
        "Comparing heights, is {a} dwarfed by {b}?",
        "Is {a} the shorter one when set against {b}?",
        "Does the top of {a} reach less high above its base than {b} does?",
        "Measured from bottom to top, is {a} lower than {b}?",
        "Can you confirm that {a} is of smaller stature than {b}?",
    ),
    "wider": (
        "Is {a} wider than {b}?",
        "Does {a} have a greater width than {b}?",
        "Would you say {a} is broader than {b}?",
        "Measured side to side, does {a} span more than {b}?",
        "Does {a} come out as the wider one next to {b}?",
        "Is {a} more spread out across than {b}?",
        "Does {a} exceed {b} in width?",
        "Can you confirm that {a} is broader across than {b}?",
    ),
    "thinner": (
        "Is {a} thinner than {b}?",
        "Does {a} have a smaller width than {b}?",
        "Would you say {a} is narrower than {b}?",
        "Measured side to side, does {a} span less than {b}?",
        "Does {a} come out as the slimmer one next to {b}?",
        "Is {a} less spread out across than {b}?",
        "Does {a} fall below {b} in width?",
        "Can you confirm that {a} is narrower across than {b}?",
    ),
}

_OBJECT_YES_NO_ANSWERS: dict[str, tuple[str, ...]] = {
    "left_of:yes": (
        "Yes, {a} is to the left of {b}.",
        "Yes. From the camera's viewpoint {a} sits left of {b}.",
        "Correct, {a} appears on the left-hand side of {b}.",
        "Indeed, {a} is further left than {b}.",
    ),
    "left_of:no": (
        "No, {a} is to the right of {b}.",
        "No. From the camera's viewpoint {a} sits right of {b}.",
        "Incorrect, {a} appears on the right-hand side of {b}.",
        "No, it is the other way round: {a} is further right than {b}.",
    ),
    "right_of:yes": (
        "Yes, {a} is to the right of {b}.",
        "Yes. From the camera's viewpoint {a} sits right of {b}.",
        "Correct, {a} appears on the right-hand side of {b}.",
        "Indeed, {a} is further right than {b}.",
    ),
    "right_of:no": (
        "No, {a} is to the left of {b}.",
        "No. From the camera's viewpoint {a} sits left of {b}.",
        "Incorrect, {a} appears on the left-hand side of {b}.",
        "No, it is the other way round: {a} is further left than {b}.",
    ),
    "in_front_of:yes": (
        "Yes, {a} is in front of {b}.",
        "Yes. {a} is nearer to the camera than {b}.",
        "Correct, {a} stands before {b} as seen from the camera.",
        "Indeed, {b} lies behind {a}.",
    ),
    "in_front_of:no": (
        "No, {a} is behind {b}.",
        "No. {a} is farther from the camera than {b}.",
        "Incorrect, {a} stands beyond {b} as seen from the camera.",
        "No, it is {b} that lies in front, with {a} further back.",
    ),
    "behind:yes": (
        "Yes, {a} is behind {b}.",
        "Yes. {a} is farther from the camera than {b}.",
        "Correct, {a} stands beyond {b} as seen from the camera.",
        "Indeed, {b} lies in front of {a}.",
    ),
    "behind:no": (
        "No, {a} is in front of {b}.",
        "No. {a} is nearer to the camera than {b}.",
        "Incorrect, {a} stands before {b} as seen from the camera.",
        "No, it is {b} that lies further back, with {a} in front.",
    ),
    "bigger:yes": (
        "Yes, {a} is bigger than {b}.",
        "Yes. {a} takes up more space than {b}.",
        "Correct, {a} has a greater volume than {b}.",
        "Indeed, {b} is the smaller one; {a} is larger.",
    ),
    "bigger:no": (
        "No, {a} is smaller than {b}.",
        "No. {a} takes up less space than {b}.",
        "Incorrect, {b} has a greater volume than {a}.",
        "No, {b} is the larger one; {a} is more compact.",
    ),
    "smaller:yes": (
        "Yes, {a} is smaller than {b}.",
        "Yes. {a} takes up less space than {b}.",
        "Correct, {b} has a greater volume than {a}.",
        "Indeed, {a} is the more compact one; {b} is larger.",
    ),
    "smaller:no": (
        "No, {a} is bigger than {b}.",
        "No. {a} takes up more space than {b}.",
        "Incorrect, {a} has a greater volume than {b}.",
        "No, {a} is the larger one; {b} is more compact.",
    ),
    "taller:yes": (
        "Yes, {a} is taller than {b}.",
        "Yes. {a} stands higher than {b}.",
        "Correct, {a} has a greater height than {b}.",
        "Indeed, {b} is shorter than {a}.",
    ),
    "taller:no": (
        "No, {a} is shorter than {b}.",
        "No. {a} stands lower than {b}.",
        "Incorrect, {b} has a greater height than {a}.",
        "No, {b} rises higher than {a}.",
    ),
    "shorter:yes": (
        "Yes, {a} is shorter than {b}.",
        "Yes. {a} stands lower than {b}.",
        "Correct, {b} has a greater height than {a}.",
        "Indeed, {b} rises higher than {a}.",
    ),
    "shorter:no": (
        "No, {a} is taller than {b}.",
        "No. {a} stands higher than {b}.",
        "Incorrect, {a} has a greater height than {b}.",
        "No, {b} is shorter than {a}.",
    ),
    "wider:yes": (
        "Yes, {a} is wider than {b}.",
        "Yes. {a} is broader than {b}.",
        "Correct, {a} spans more from side to side than {b}.",
        "Indeed, {b} is narrower than {a}.",
    ),
    "wider:no": (
        "No, {a} is thinner than {b}.",
        "No. {a} is narrower than {b}.",
        "Incorrect, {b} spans more from side to side than {a}.",
        "No, {b} is broader than {a}.",
    ),
    "thinner:yes": (
        "Yes, {a} is thinner than {b}.",
        "Yes. {a} is narrower than {b}.",
        "Correct, {b} spans more from side to side than {a}.",
        "Indeed, {b} is broader than {a}.",
    ),
    "thinner:no": (
        "No, {a} is wider than {b}.",
        "No. {a} is broader than {b}.",
        "Incorrect, {a} spans more from side to side than {b}.",
        "No, {b} is narrower than {a}.",
    ),
}

# ------------------------------------------------------------------------------------------ object-centric, numbers

_OBJECT_NUMBER_QUESTIONS: dict[str, tuple[str, ...]] = {
    "direct_distance": (
        "What is the distance between {a} and {b}?",
        "How far apart are {a} and {b}?",
        "Can you measure the straight-line distance from {a} to {b}?",
        "How much space separates {a} from {b}?",
        "Tell me the direct distance between the centres of {a} and {b}.",
        "If you drew a line from {a} to {b}, how long would it be?",
        "How far is {a} from {b}?",
        "Give the gap between {a} and {b} in metres.",
    ),
    "horizontal_distance": (
        "What is the horizontal distance between {a} and {b}?",
        "Ignoring height differences, how far apart are {a} and {b}?",
        "Measured along the ground, how far is {a} from {b}?",
        "From a bird's-eye view, what distance separates {a} and {b}?",
        "How far apart are {a} and {b} on the ground plane?",
        "Tell me the flat, level distance from {a} to {b}.",
        "Projected onto the road surface, how long is the gap between {a} and {b}?",
        "Seen from directly above, how much space lies between {a} and {b}?",
    ),
    "vertical_distance": (
        "What is the vertical distance between {a} and {b}?",
        "How much higher or lower is {a} compared with {b}?",
        "What is the height difference between the centres of {a} and {b}?",
        "Measured straight up and down, how far apart are {a} and {b}?",
        "By how much do {a} and {b} differ in elevation?",
        "Tell me the vertical gap between {a} and {b}.",
        "Ignoring horizontal offsets, how far apart are {a} and {b}?",
        "How large is the vertical offset from {a} to {b}?",
    ),
    "width": (
        "How wide is {a}?",
        "What is the width of {a}?",
        "Can you estimate how broad {a} is?",
        "Measured side to side, how wide does {a} come out?",
        "Tell me the width of {a} in metres.",
        "How much room does {a} take up across?",
        "What is the side-to-side extent of {a}?",
        "Give the breadth of {a}.",
    ),
    "height": (
        "How tall is {a}?",
        "What is the height of {a}?",
        "Can you estimate how high {a} stands?",
        "Measured from bottom to top, how tall does {a} come out?",
        "Tell me the height of {a} in metres.",
        "How far does {a} rise above the ground?",
        "What is the vertical extent of {a}?",
        "Give the stature of {a}.",
    ),
}

_OBJECT_NUMBER_ANSWERS: dict[str, tuple[str, ...]] = {
    "direct_distance": (
        "{a} and {b} are {value} apart.",
        "The distance between {a} and {b} is {value}.",
        "{a} is {value} from {b}.",
        "About {value} separates {a} from {b}.",
        "Measured centre to centre, {a} and {b} are {value} away from each other.",
    ),
    "horizontal_distance": (
        "Horizontally, {a} and {b} are {value} apart.",
        "The horizontal distance between {a} and {b} is {value}.",
        "Along the ground, {a} is {value} from {b}.",
        "Seen from above, {value} separates {a} and {b}.",
    ),
    "vertical_distance": (
        "Vertically, {a} and {b} are {value} apart.",
        "The vertical distance between {a} and {b} is {value}.",
        "The centres of {a} and {b} differ in height by {value}.",
        "{a} and {b} are offset by {value} up and down.",
    ),
    "width": (
        "{a} is {value} wide.",
        "The width of {a} is {value}.",
        "{a} measures {value} across.",
        "Side to side, {a} spans {value}.",
    ),
    "height": (
        "{a} is {value} tall.",
        "The height of {a} is {value}.",
        "{a} stands {value} high.",
        "From bottom to top, {a} measures {value}.",
    ),
}

# ------------------------------------------------------------------------------------------ ego-centric, numbers

_EGO_NUMBER_QUESTIONS: dict[str, tuple[str, ...]] = {
    "ego_distance": (
        "How far is {a} from the ego vehicle?",
        "What is the distance between the ego vehicle and {a}?",
        "How many metres separate us from {a}?",
        "From where our car is, how far away is {a}?",
        "Can you tell me the distance from the ego car to {a}?",
        "How distant is {a} from our vehicle?",
        "What gap lies between {a} and the ego vehicle?",
        "Measured from our car, how far off is {a}?",
    ),
    "ego_heading_angle": (
        "What is the heading angle of {a} relative to the ego vehicle, in degrees (0 is straight ahead, "
        "positive to the left)?",
        "At which angle does {a} lie from our car, measured counter-clockwise from straight ahead?",
        "In degrees, what is the bearing of {a} as seen from the ego vehicle (counter-clockwise positive, zero ahead)?",
        "Taking straight ahead as zero and left turns as positive, what angle is {a} at?",
        "How many degrees off the forward direction of the ego car is {a}? Count angles to the left as positive.",
        "Give the direction of {a} from the ego vehicle as an angle: zero forward, positive counter-clockwise.",
        "Relative to where our car points, at what angle in degrees is {a}? Positive means to the left.",
        "What angle separates the ego vehicle's forward axis from the direction towards {a} "
        "(left positive, right negative)?",
    ),
    "ego_clock_direction": (
        "In which clock direction is {a} from the ego vehicle?",
        "Using clock positions with twelve o'clock straight ahead, where is {a}?",
        "At what o'clock does {a} appear relative to our car?",
        "If straight ahead is twelve o'clock, at which hour is {a}?",
        "What clock position describes where {a} is from the ego car?",
        "Tell me the direction of {a} from our vehicle as a clock position.",
        "Picture a clock face centred on the ego car with twelve ahead: which hour points to {a}?",
        "Where is {a} relative to us, in clock terms?",
    ),
    "region_length": (
        "How long is {a}?",
        "What is the length of {a}?",
        "Measured front to back, how long does {a} come out?",
        "Can you estimate the length of {a}?",
        "Tell me how long {a} is, in metres.",
        "What is the front-to-rear extent of {a}?",
        "How much does {a} stretch along its own heading?",
        "Give the length of {a}.",
    ),
    "region_width": (
        "Seen from the ego car, what width does {a} have?",
        "How wide is {a}, in metres?",
        "Measured across, what width does {a} have?",
        "Can you estimate the breadth of {a}?",
        "Tell me how broad {a} is.",
        "What is the lateral extent of {a}?",
        "How much does {a} stretch from one side to the other?",
        "Give the width of {a}.",
    ),
    "region_height": (
        "Seen from the ego car, what height does {a} have?",
        "How tall is {a}, in metres?",
        "Measured upwards, what height does {a} have?",
        "Can you estimate the stature of {a}?",
        "Tell me how high {a} is.",
        "What is the vertical size of {a}?",
        "How much does {a} stretch from bottom to top?",
        "Give the height of {a}.",
    ),
}

_EGO_NUMBER_ANSWERS: dict[str, tuple[str, ...]] = {
    "ego_distance": (
        "{a} is {value} from the ego vehicle.",
        "The distance to {a} is {value}.",
        "{a} lies {value} away from our car.",
        "We are {value} from {a}.",
    ),
    "ego_heading_angle": (
        "{a} is at a heading angle of {value}.",
        "The angle to {a} is {value}.",
        "Seen from the ego vehicle, {a} lies at {value}.",
        "{a} is found at {value} from straight ahead.",
    ),
    "ego_clock_direction": (
        "{a} is at {value}.",
        "From the ego vehicle, {a} sits at {value}.",
        "You will find {a} at {value}.",
        "{a} lies in the {value} direction.",
    ),
    "region_length": (
        "{a} is {value} long.",
        "The length of {a} is {value}.",
        "Front to back, {a} measures {value}.",
        "{a} stretches {value} along its heading.",
    ),
    "region_width": (
        "{a} is {value} wide.",
        "The width of {a} is {value}.",
        "Across, {a} measures {value}.",
        "{a} spans {value} from side to side.",
    ),
    "region_height": (
        "{a} is {value} tall.",
        "The height of {a} is {value}.",
        "Upwards, {a} measures {value}.",
        "{a} rises {value} from bottom to top.",
    ),
}

# ------------------------------------------------------------------------------------------ ego-centric, words

_EGO_WORD_QUESTIONS: dict[str, tuple[str, ...]] = {
    "ego_left_right": (
        "Is {a} on the left or the right of the ego vehicle?",
        "On which side of our car is {a}, left or right?",
        "Does {a} lie to the left or to the right of the ego car?",
        "Relative to the ego vehicle, which side is {a} on?",
        "Would you find {a} on our left-hand or right-hand side?",
        "Left or right: where is {a} with respect to the ego vehicle?",
        "Seen from the driver's seat, is {a} on the left or on the right?",
        "Which side of the ego vehicle's centre line does {a} occupy?",
    ),
}

_EGO_WORD_ANSWERS: dict[str, tuple[str, ...]] = {
    "ego_left_right:left": (
        "{a} is on the left of the ego vehicle.",
        "Left: {a} is on our left-hand side.",
        "{a} lies to the left of our car.",
        "It is on the left; {a} occupies the ego vehicle's left side.",
    ),
    "ego_left_right:right": (
        "{a} is on the right of the ego vehicle.",
        "Right: {a} is on our right-hand side.",
        "{a} lies to the right of our car.",
        "It is on the right; {a} occupies the ego vehicle's right side.",
    ),
}

# ------------------------------------------------------------------------------------------ ego-centric, yes/no

_EGO_YES_NO_QUESTIONS: dict[str, tuple[str, ...]] = {
    "bigger_than_ego": (
        "Is {a} bigger than the ego vehicle?",
        "Does {a} take up more space than our car?",
        "Would you say {a} has a greater volume than the ego car?",
        "Compared with our vehicle, is {a} larger?",
        "Is {a} physically larger than the car we are in?",
        "Does {a} outsize the ego vehicle?",
        "In terms of overall size, does {a} exceed our car?",
        "Is our vehicle smaller than {a}?",
    ),
    "smaller_than_ego": (
        "Is {a} smaller than the ego vehicle?",
        "Does {a} take up less space than our car?",
        "Would you say {a} has a lower volume than the ego car?",
        "Compared with our vehicle, is {a} more compact?",
        "Is {a} physically smaller than the car we are in?",
        "Is {a} outsized by the ego vehicle?",
        "In terms of overall size, does {a} fall short of our car?",
        "Is our vehicle bigger than {a}?",
    ),
    "taller_than_ego": (
        "Is {a} taller than the ego vehicle?",
        "Does {a} stand higher than our car?",
        "Would you say {a} has a greater height than the ego car?",
        "Compared with our vehicle, does {a} rise higher?",
        "Does {a} tower over the car we are in?",
        "Measured from bottom to top, is {a} higher than the ego vehicle?",
        "Is {a} of greater stature than our car?",
        "Is our vehicle lower than {a}?",
    ),
    "shorter_than_ego": (
        "Is {a} shorter than the ego vehicle?",
        "Does {a} stand lower than our car?",
        "Would you say {a} has a smaller height than the ego car?",
        "Compared with our vehicle, is {a} less tall?",
        "Is {a} dwarfed by the car we are in?",
        "Measured from bottom to top, is {a} lower than the ego vehicle?",
        "Is {a} of smaller stature than our car?",
        "Is our vehicle taller than {a}?",
    ),
    "wider_than_ego": (
        "Is {a} wider than the ego vehicle?",
        "Does {a} have a greater width than our car?",
        "Would you say {a} is broader than the ego car?",
        "Compared with our vehicle, does {a} span more from side to side?",
        "Is {a} more spread out across than the car we are in?",
        "Does {a} exceed the ego vehicle in width?",
        "Measured side to side, is {a} broader than our car?",
        "Is our vehicle narrower than {a}?",
    ),
    "thinner_than_ego": (
        "Is {a} thinner than the ego vehicle?",
        "Does {a} have a smaller width than our car?",
        "Would you say {a} is narrower than the ego car?",
        "Compared with our vehicle, does {a} span less from side to side?",
        "Is {a} less spread out across than the car we are in?",
        "Does {a} fall below the ego vehicle in width?",
        "Measured side to side, is {a} slimmer than our car?",
        "Is our vehicle wider than {a}?",
    ),
}

_EGO_YES_NO_ANSWERS: dict[str, tuple[str, ...]] = {
    "bigger_than_ego:yes": (
        "Yes, {a} is bigger than the ego vehicle.",
        "Yes. {a} takes up more space than our car.",
        "Correct, {a} has a greater volume than our car.",
        "Indeed, our car is the smaller one compared with {a}.",
    ),
    "bigger_than_ego:no": (
        "No, {a} is smaller than the ego vehicle.",
        "No. {a} takes up less space than our car.",
        "Incorrect, the ego vehicle has a greater volume than {a}.",
        "No, our car is the larger one compared with {a}.",
    ),
    "smaller_than_ego:yes": (
        "Yes, {a} is smaller than the ego vehicle.",
        "Yes. {a} takes up less space than our car.",
        "Correct, the ego vehicle has a greater volume than {a}.",
        "Indeed, our car is the larger one compared with {a}.",
    ),
    "smaller_than_ego:no": (
        "No, {a} is bigger than the ego vehicle.",
        "No. {a} takes up more space than our car.",
        "Incorrect, {a} has a greater volume than our car.",
        "No, our car is the smaller one compared with {a}.",
    ),
    "taller_than_ego:yes": (
        "Yes, {a} is taller than the ego vehicle.",
        "Yes. {a} stands higher than our car.",
        "Correct, {a} has a greater height than our car.",
        "Indeed, our car is lower than {a}.",
    ),
    "taller_than_ego:no": (
        "No, {a} is shorter than the ego vehicle.",
        "No. {a} stands lower than our car.",
        "Incorrect, the ego vehicle has a greater height than {a}.",
        "No, our car is taller than {a}.",
    ),
    "shorter_than_ego:yes": (
        "Yes, {a} is shorter than the ego vehicle.",
        "Yes. {a} stands lower than our car.",
        "Correct, the ego vehicle has a greater height than {a}.",
        "Indeed, our car is taller than {a}.",
    ),
    "shorter_than_ego:no": (
        "No, {a} is taller than the ego vehicle.",
        "No. {a} stands higher than our car.",
        "Incorrect, {a} has a greater height than our car.",
        "No, our car is lower than {a}.",
    ),
    "wider_than_ego:yes": (
        "Yes, {a} is wider than the ego vehicle.",
        "Yes. {a} is broader than our car.",
        "Correct, {a} spans more from side to side than our car.",
        "Indeed, our car is narrower than {a}.",
    ),
    "wider_than_ego:no": (
        "No, {a} is thinner than the ego vehicle.",
        "No. {a} is narrower than our car.",
        "Incorrect, the ego vehicle spans more from side to side than {a}.",
        "No, our car is broader than {a}.",
    ),
    "thinner_than_ego:yes": (
        "Yes, {a} is thinner than the ego vehicle.",
        "Yes. {a} is narrower than our car.",
        "Correct, the ego vehicle spans more from side to side than {a}.",
        "Indeed, our car is broader than {a}.",
    ),
    "thinner_than_ego:no": (
        "No, {a} is wider than the ego vehicle.",
        "No. {a} is broader than our car.",
        "Incorrect, {a} spans more from side to side than our car.",
        "No, our car is narrower than {a}.",
    ),
}

QUESTIONS: dict[str, tuple[str, ...]] = {
    **_OBJECT_YES_NO_QUESTIONS,
    **_OBJECT_NUMBER_QUESTIONS,
    **_EGO_NUMBER_QUESTIONS,
    **_EGO_WORD_QUESTIONS,
    **_EGO_YES_NO_QUESTIONS,
}
ANSWERS: dict[str, tuple[str, ...]] = {
    **_OBJECT_YES_NO_ANSWERS,
    **_OBJECT_NUMBER_ANSWERS,
    **_EGO_NUMBER_ANSWERS,
    **_EGO_WORD_ANSWERS,
    **_EGO_YES_NO_ANSWERS,
}

SPATIAL_PHRASEBOOK = Phrasebook(QUESTIONS, ANSWERS)

"""Question and answer phrasings of the ego-centric spatial predicates (distance, heading, clock direction,
left/right of the ego, region sizes, size comparisons with the ego vehicle), as data. Slots and answer-set names:
module docstring of ``stridegen.pipeline.qa.templates_spatial``."""

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

EGO_QUESTIONS: dict[str, tuple[str, ...]] = {**_EGO_NUMBER_QUESTIONS, **_EGO_WORD_QUESTIONS, **_EGO_YES_NO_QUESTIONS}
EGO_ANSWERS: dict[str, tuple[str, ...]] = {**_EGO_NUMBER_ANSWERS, **_EGO_WORD_ANSWERS, **_EGO_YES_NO_ANSWERS}

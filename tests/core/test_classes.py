from stridegen.core import vocabulary as classes


def test_every_detection_class_has_a_stride_class():
    assert set(classes.DETECTION_TO_STRIDE) == set(classes.DETECTION_CLASSES)
    assert set(classes.TRACKING_CLASSES) < set(classes.DETECTION_CLASSES)


def test_mapping_known_values():
    assert classes.stride_class("vehicle.car") == "vehicle"
    assert classes.stride_class("vehicle.truck") == "large vehicle"
    assert classes.stride_class("human.pedestrian.personal_mobility") == "kick scooter"
    assert classes.stride_class("bus") == "bus"
    assert classes.stride_class("animal") == ""
    assert classes.detection_class("vehicle.bus.bendy") == "bus"
    assert classes.detection_class("human.pedestrian.personal_mobility") == ""


def test_detection_classes_match_devkit():
    import pytest

    const = pytest.importorskip("nuscenes.eval.detection.constants")
    assert set(const.DETECTION_NAMES) == set(classes.DETECTION_CLASSES)
    config = pytest.importorskip("nuscenes.eval.common.config")
    assert set(config.config_factory("tracking_nips_2019").tracking_names) == set(classes.TRACKING_CLASSES)

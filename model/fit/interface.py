"""A drive whose interface is slower than its media: the calibration's sustained rate is the interface's.

A long read streams at the slower of the media and the interface (DiskSim's bus transfer overlaps the
media's). A block's passage under the head (a calibration's ``block_transfer_s``, timed from the rotation
stage's forward chains, which no bus transfer enters) gives the media's rate. Where that rate exceeds the
fastest sustained rate, the skews' share included, by :data:`INTERFACE_LIMIT_RATIO`, every zone rate the
calibration found is the interface's and the media's zones are hidden behind it. Then:

* the seek pairs are counted in the media's tracks (:meth:`CalibrationMeasurements.track_of_bytes`), so
  that pairs within two of the head's tracks, whose positioning is none or a head switch, stay out of the
  seek curve's fits as they do on any other drive (counted in the interface's tracks, a fraction of the head's,
  they entered them and pulled the short piece down);
* the calibrated Disk (:func:`~diskmodel.model.fit.calibration_views.calibrated_disk`) has one media zone
  of the block's passage and the sustained rate as its interface rate.

A drive whose outer zones outrun its interface and whose inner ones do not is not told apart.
"""
from __future__ import annotations

from dataclasses import dataclass

from .._checks import finite_scalar, positive_rate

__all__ = ["INTERFACE_LIMIT_RATIO", "InterfaceLimit", "interface_limit", "track_change_loss_rev"]

#: A sustained rate this much below the rate under the head (a block's passage, with the skews' share)
#: is taken for the interface's: the skews and the host's noise about a block's passage (a few per cent)
#: stay well inside it, while a drive behind a slower bus shows the media at two to four times its rate.
INTERFACE_LIMIT_RATIO = 1.25


@dataclass(frozen=True)
class InterfaceLimit:
    """The interface's rate (the fastest sustained rate) and the media's under the head [bytes/s], and
    the mean share of a revolution a track change loses to its skew [rev]."""

    interface_rate_bytes_per_s: float
    media_rate_bytes_per_s: float
    track_change_loss_rev: float

    def __post_init__(self):
        positive_rate("interface_rate_bytes_per_s", self.interface_rate_bytes_per_s)
        positive_rate("media_rate_bytes_per_s", self.media_rate_bytes_per_s)
        finite_scalar("track_change_loss_rev", self.track_change_loss_rev, nonnegative=True)

    def track_bytes(self, period_s: float) -> float:
        """The bytes of one of the media's tracks as a sustained read counts them: the media's rate with the
        skews' share taken off, times a revolution (a zone's ``rate * T_rot`` on a drive the media limits)."""
        return self.media_rate_bytes_per_s / (1.0 + self.track_change_loss_rev) * period_s

    def note(self, block_bytes: int, sectors_per_track: int) -> str:
        """What the calibrated Disk's estimates say of it, its media zone having *sectors_per_track*."""
        x = block_bytes / self.media_rate_bytes_per_s
        return (f"the sustained rate ({self.interface_rate_bytes_per_s / 1e6:.3f} MB/s) is below the rate under "
                f"the head ({self.media_rate_bytes_per_s / 1e6:.3f} MB/s, a block's passage of {x * 1e6:.2f} us): "
                f"taken as the interface's rate; the media as one zone of {sectors_per_track} sectors per track "
                f"(the zones behind the interface are not visible)")


def track_change_loss_rev(surfaces, track_skew_fraction, cylinder_skew_fraction) -> float:
    """The mean share of a revolution a track change loses to its skew [rev]: ``surfaces - 1`` head switches
    and one cylinder switch per cylinder (one surface where not measured; the track skew for a cylinder
    skew not measured; none where neither was)."""
    surfaces = surfaces or 1
    track = track_skew_fraction or 0.0
    cylinder = cylinder_skew_fraction if cylinder_skew_fraction is not None else track
    return ((surfaces - 1) * track + cylinder) / surfaces


def interface_limit(m) -> InterfaceLimit | None:
    """The :class:`InterfaceLimit` of calibration measurements *m* (a ``CalibrationMeasurements`` or
    ``CalibrationResult``), or None where the media sets the sustained rate (or no block passage was
    measured)."""
    x = m.block_transfer_s
    if not x or not m.zones or m.rotation_period_s is None:
        return None
    lost = track_change_loss_rev(m.surfaces, m.track_skew_fraction, m.cylinder_skew_fraction)
    fastest = max(float(z[2]) for z in m.zones)
    media = m.block_size_bytes / float(x)
    if media <= INTERFACE_LIMIT_RATIO * fastest * (1 + lost):
        return None
    return InterfaceLimit(fastest, media, lost)

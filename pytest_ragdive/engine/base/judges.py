"""The models that play the method's three parts: generator, validator and evaluator (the
simulated user's role is another thing: :mod:`..roles`)."""

from __future__ import annotations

from dataclasses import dataclass

from ...llm.model import Model, as_model


@dataclass(frozen=True)
class Judges:
    """The models that play the three RAG-DIVE parts, as litellm model names or
    :class:`Model` objects. The validator and the evaluator default to the generator;
    the paper advises a validator from another family than the generator.

    The generator samples at ``generator_temperature`` so that repeated baseline runs
    are genuine samples; the validator and evaluator always judge at temperature 0.
    """

    generator: str | Model
    validator: str | Model | None = None
    evaluator: str | Model | None = None
    generator_temperature: float = 0.7

    @property
    def models(self) -> dict[str, Model]:
        gen = as_model(self.generator)
        return {
            "generator": gen,
            "validator": as_model(self.validator or gen),
            "evaluator": as_model(self.evaluator or gen),
        }

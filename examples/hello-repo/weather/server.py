"""A small, deterministic weather service written the ordinary MCP way.

Everything is computed from fixed tables: no network, no clocks, no randomness.
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Literal

from mcp.server.mcpserver import Context, MCPServer, UserMessage
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

mcp = MCPServer(
    "weather",
    instructions="Forecasts and climate facts for a handful of cities (synthetic, deterministic data).",
)

# city -> (base temperature in °C, daily swing, conditions cycle)
CITIES: dict[str, tuple[float, float, tuple[str, ...]]] = {
    "lima": (19.0, 4.0, ("cloudy", "cloudy", "sunny")),
    "oslo": (4.0, 5.0, ("snow", "cloudy", "rain", "sunny")),
    "paris": (12.0, 6.0, ("rain", "cloudy", "sunny")),
    "tokyo": (16.0, 7.0, ("sunny", "rain", "cloudy", "sunny")),
}

Conditions = Literal["sunny", "cloudy", "rain", "snow"]


class DayForecast(BaseModel):
    day: int = Field(description="1 = tomorrow")
    high_c: float
    low_c: float
    conditions: Conditions


class Forecast(BaseModel):
    city: str
    days: list[DayForecast]


class Conversion(TypedDict):
    value: float
    unit: Literal["C", "F"]


def _city(name: str) -> tuple[float, float, tuple[str, ...]]:
    try:
        return CITIES[name.lower()]
    except KeyError:
        raise ToolError(f"unknown city {name!r}; known cities: {', '.join(sorted(CITIES))}") from None


def _forecast(city: str, days: int) -> Forecast:
    base, swing, cycle = _city(city)
    out = []
    for d in range(1, days + 1):
        drift = ((d * 7) % 5) - 2  # deterministic wobble in [-2, 2]
        high = base + swing / 2 + drift
        out.append(
            DayForecast(day=d, high_c=high, low_c=high - swing, conditions=cycle[(d - 1) % len(cycle)])  # type: ignore[arg-type]
        )
    return Forecast(city=city.lower(), days=out)


@mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
def forecast(city: str, days: Annotated[int, Field(ge=1, le=7, description="How many days")] = 3) -> Forecast:
    """Forecast for a city over the next days (structured output)."""
    return _forecast(city, days)


@mcp.tool(annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
def convert(value: float, to: Literal["C", "F"]) -> Conversion:
    """Convert a temperature to Celsius ("C") or Fahrenheit ("F")."""
    if to == "F":
        return {"value": round(value * 9 / 5 + 32, 2), "unit": "F"}
    return {"value": round((value - 32) * 5 / 9, 2), "unit": "C"}


@mcp.tool()
async def survey(city: str, ctx: Context, steps: Annotated[int, Field(ge=1, le=100)] = 5) -> str:
    """Survey a city's weather stations, reporting progress after each one.

    Takes about 50 ms per step; cancelling the request stops it at the next step.
    """
    _city(city)
    await ctx.info(f"surveying {city} ({steps} stations)")
    for i in range(steps):
        await ctx.report_progress(i, steps, f"station {i + 1} of {steps}")
        await asyncio.sleep(0.05)
    await ctx.report_progress(steps, steps, "done")
    await ctx.info(f"survey of {city} complete")
    return f"surveyed {steps} stations in {city.lower()}"


@mcp.resource("weather://cities", name="cities", mime_type="application/json")
def cities() -> str:
    """The cities this service knows about."""
    return json.dumps(sorted(CITIES))


@mcp.resource("weather://forecast/{city}", name="city-forecast", mime_type="application/json")
def city_forecast(city: str) -> str:
    """Three-day forecast for one city, as a JSON document."""
    return _forecast(city, 3).model_dump_json()


@mcp.prompt()
def plan_trip(city: str, days: str = "3") -> list[UserMessage]:
    """Ask the model to plan a trip around the forecast."""
    return [
        UserMessage(
            f"I am visiting {city} for {days} days. Read weather://forecast/{city.lower()} "
            "and suggest what to pack and which days suit outdoor plans."
        )
    ]


if __name__ == "__main__":
    mcp.run()

from __future__ import annotations

import pytest


@pytest.mark.parametrize("url", ["/today/", "/palace/", "/corridor/", "/log/", "/episodes/", "/tokens/", "/palaces/"])
def test_pages_render_for_alice(url, alice, project, client_for, make_memory, personal):
    make_memory(personal, "Alice prefers tea", kind="preference", placard="tea 2026")
    make_memory(project, "We deploy on Fridays", kind="decision")
    response = client_for(alice).get(url)
    assert response.status_code == 200, response.content[:2000]

"""Framework integrations, each an optional extra that imports its framework only when used:

- ``fivefold.integrations.langgraph.FivefoldStore``: a LangGraph ``BaseStore``
  (``pip install "fivefold[langgraph]"``)
- ``fivefold.integrations.langchain.FivefoldRetriever``: a LangChain retriever
  (``pip install "fivefold[langchain]"``)
- ``fivefold.integrations.llamaindex.FivefoldRetriever``: a LlamaIndex retriever
  (``pip install "fivefold[llamaindex]"``)

They use only the public API (``Memory``, ``Client``, ``AsyncClient`` and the result types), so
each works on an embedded store and on a served one alike.
"""

__all__: list[str] = []

# The kube-extender image (`kube-extender serve` for deploy/extender.yaml; `kube-extender run`
# works too). Build from the repository root, then load it into kind:
#   docker build -t kube-extender:dev .
#   kind load docker-image kube-extender:dev --name kube-extender
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# A fixed numeric uid/gid: deploy/extender.yaml runs it with runAsNonRoot and runAsUser 10001.
RUN groupadd --system --gid 10001 app \
    && useradd --system --uid 10001 --gid 10001 --home-dir /home/app --create-home app

WORKDIR /src
# Only what the package build needs (pyproject.toml names README.md as the readme).
COPY pyproject.toml README.md ./
COPY extender ./extender
RUN pip install . && rm -rf /src

WORKDIR /home/app
USER 10001:10001
EXPOSE 8888
ENTRYPOINT ["kube-extender"]
CMD ["--help"]

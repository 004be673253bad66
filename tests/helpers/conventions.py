"""Helpers shared by the unit and integration tests of conventions (tests/unit, tests/integration)."""


# Table 8, SYSTEM PROMPT with DOMAIN ADAPTATION SCORE CRITERIA and STEPS
TABLE8_SYSTEM = (
    "You will be given one summary written for an article. Your task is to rate the summary on one metric. "
    "Please make sure you read and understand these instructions very carefully. Please keep this document "
    "open while reviewing, and refer to it as needed.\n"
    "Evaluation Criteria: Domain Adaptation(1-5) - the degree to which the summary adheres to the "
    "domain-specific language. A good summary employs domain-specific terminology and conveys the sense that "
    "model comprehends and encapsulates domain-specific knowledge. It resembles the content that would "
    "authored by a domain expert. Annotators were also asked to penalize summaries that didn't adhere to "
    "domain-specific knowledge, and rather used simple words.\n"
    "Evaluation Steps: 1. Read the article carefully and understand the domain it belongs to.\n"
    "2. Read the summary and check if it contains domain-specific terminologies and concepts, and if it is "
    "able to concisely summaries the domain specific concept in the article.\n"
    "3. Assign a score for domain adaptation based on the Evaluation Criteria."
)
# Table 8, USER PROMPT
TABLE8_USER = (
    "Example:\n"
    "Source Text: DOC\n"
    "Summary: SUMM\n"
    "Evaluation Form: Please provide your response in two parts. First the evaluation score for the defined "
    "metrics, followed by an explanation for the score. Please limit your response to 30 words.\n"
    "Domain Adaptation"
)
# gpt4-eval.py: EVALUATION_SYSTEM_PROMPT_TEMPLATE with DOMAIN_ADAPTATION_SCORE_CRITERIA / _STEPS
RELEASE_DA_SYSTEM = (
    "\nYou will be given one summary written for an article. Your task is to rate the summary on one metric.\n"
    "Please make sure you read and understand these instructions very carefully. \n"
    "Please keep this document open while reviewing, and refer to it as needed.\n\n"
    "Evaluation Criteria:\n\n\n"
    "Domain Adaptation(1-5) - the degree to which the summary adheres to the doamin specific language. "
    "A good summary employs domain-specific terminology and conveys the sense that model comprehends and "
    "encapsulates domain-specific knowledge.It resembles the content that would authored by a domain expert. "
    "Annotators were also asked to penalize summaries that didn't adhere to domain-specific knowledge, and "
    "rather used simple words.\n\n\n"
    "Evaluation Steps:\n\n\n"
    "1. Read the article carefully and understand the domain it belongs to.\n"
    "2. Read the summary and check if it contains domain-specific terminologies and concepts, and if it is "
    "able to concisely summaries the domain specific concept in the article. \n"
    "3. Assign a score for domain adaptation based on the Evaluation Criteria.\n\n"
)
# gpt4-eval.py: EVALUATION_USER_PROMPT_TEMPLATE with metric_name "Domain_Adaptation"
RELEASE_DA_USER = (
    "\n\nExample:\n\nSource Text:\n\nDOC\n\nSummary:\n\nSUMM\n\nEvaluation Form:\n\n"
    "Please provide your response in two parts. First the score as a numeric value followed by an explanation "
    "for the score. Please limit your response to 30 words\n\n\n- Domain_Adaptation\n"
)
